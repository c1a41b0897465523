def lookup_and_clamp(x, idx, vals, fill):
    looked = x.at[idx].get(mode="fill", fill_value=fill)
    clamped = x.at[idx].add(vals, mode="clip")
    return looked, clamped
