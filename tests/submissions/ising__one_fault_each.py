"""Each function fails exactly one check of topic `ising`.

`_hamiltonian` is a correct operator, which the graded functions use unless their fault is
the operator itself.
"""

import jax
import netket as nk
import numpy as np
import optax
from netket.operator.spin import sigmax, sigmaz


def _hamiltonian(n, h, J):
    return nk.operator.Ising(nk.hilbert.Spin(s=1 / 2, N=n), nk.graph.Chain(n, pbc=True), h=h, J=-J)


def tfim_hamiltonian(n, h, J):
    """NetKet's J taken for the task's J: an antiferromagnet (fails correct: the ZZ term's sign)."""
    return nk.operator.Ising(nk.hilbert.Spin(s=1 / 2, N=n), nk.graph.Chain(n, pbc=True), h=h, J=J)


def ground_state_energy(n, h, J):
    """Right, by dense diagonalisation: fine up to n = 10, seconds at n = 12 (fails speed)."""
    return np.linalg.eigvalsh(_hamiltonian(n, h, J).to_sparse().toarray())[0]


def vmc_ground_state(n, h, J, key):
    """Plain gradient descent, no SR: stalls near 1e-2 relative error (fails vmc)."""
    init_key, sampler_key = jax.random.split(key)
    H = _hamiltonian(n, h, J)
    vstate = nk.vqs.MCState(nk.sampler.MetropolisLocal(H.hilbert), nk.models.RBM(alpha=1), n_samples=512,
                            seed=init_key, sampler_seed=sampler_key)
    nk.driver.VMC(H, optax.sgd(learning_rate=0.1), variational_state=vstate).run(n_iter=100, out=None,
                                                                                 show_progress=False)
    return vstate.parameters


def correlations(n, h, J):
    """The magnetisation summed over the sites, not averaged (fails correct)."""
    H = _hamiltonian(n, h, J)
    hi = H.hilbert
    psi = nk.exact.lanczos_ed(H, compute_eigenvectors=True)[1][:, 0]
    expect = lambda op: np.vdot(psi, op.to_sparse() @ psi).real  # noqa: E731
    return expect(sum(sigmax(hi, i) for i in range(n))), np.array([expect(sigmaz(hi, 0) @ sigmaz(hi, r))
                                                                   for r in range(n // 2 + 1)])
