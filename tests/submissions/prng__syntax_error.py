def derive_keys(key, n)
    return key
