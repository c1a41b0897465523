"""Right answers written differently from the reference: they get full marks."""

import numpy as np
import scipy.sparse.linalg
import netket as nk
from netket.operator.spin import sigmax, sigmaz


def tfim_hamiltonian(n, h, J):
    """A sum of local operators (a LocalOperator), not nk.operator.Ising."""
    hi = nk.hilbert.Spin(s=1 / 2, N=n)
    return sum(-J * sigmaz(hi, i) @ sigmaz(hi, (i + 1) % n) - h * sigmax(hi, i) for i in range(n))


def ground_state_energy(n, h, J):
    """SciPy's Lanczos (ARPACK) on the sparse matrix, a Python float."""
    return float(scipy.sparse.linalg.eigsh(tfim_hamiltonian(n, h, J).to_sparse(), k=1, which="SA")[0][0])


def correlations(n, h, J):
    """ZZ correlations from the probabilities |psi(s)|^2 of the basis states (Z is diagonal)."""
    H = tfim_hamiltonian(n, h, J)
    hi = H.hilbert
    psi = nk.exact.lanczos_ed(H, compute_eigenvectors=True)[1][:, 0]
    spins = np.asarray(hi.all_states(), dtype=np.float64)
    probability = np.abs(psi) ** 2
    czz = np.array([np.sum(probability * spins[:, 0] * spins[:, r]) for r in range(n // 2 + 1)])
    mx = np.vdot(psi, (sum(sigmax(hi, i) for i in range(n)) / n).to_sparse() @ psi).real
    return mx, czz
