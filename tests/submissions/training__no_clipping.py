# crafted: the reference, with the definitions below in place of its own
"""The optimizer leaves out the chain's gradient clipping: Adam alone.

train_step fails `correct` on the cases whose gradient norm exceeds MAX_NORM (and so `compiles` and
`speed`); init_opt_state still matches (the clipping keeps no state). fit still trains (Adam hardly
needs the clipping on this data): `trains` passes, and only the one-step comparison can tell.
"""


def make_optimizer():
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=10, decay_steps=200, end_value=1e-3)
    return optax.adam(schedule)  # FAULT: no clipping
