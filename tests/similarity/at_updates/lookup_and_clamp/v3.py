def lookup_and_clamp(x, idx, vals, fill):
    return (
        x.at[idx].get(mode="fill", fill_value=fill),
        x.at[idx].add(vals, mode="clip"),
    )
