"""VMC that ignores its key: the same parameters whatever the key."""

import netket as nk
import optax


def vmc_ground_state(n, h, J, key):
    """Seeded with a constant instead of `key`: accurate, but every run returns the same RBM (fails vmc)."""
    H = nk.operator.Ising(nk.hilbert.Spin(s=1 / 2, N=n), nk.graph.Chain(n, pbc=True), h=h, J=-J)
    vstate = nk.vqs.MCState(nk.sampler.MetropolisLocal(H.hilbert), nk.models.RBM(alpha=1), n_samples=512,
                            seed=0, sampler_seed=1)
    driver = nk.driver.VMC(H, optax.sgd(learning_rate=0.1), variational_state=vstate,
                           preconditioner=nk.optimizer.SR(diag_shift=0.01))
    driver.run(n_iter=50, out=None, show_progress=False)
    return vstate.parameters
