"""Brownian distance correlation (Szekely, Rizzo and Bakirov 2007) in torch.

For samples x_1..x_n in R^p and y_1..y_n in R^q, with a_kl = |x_k - x_l| and the
double-centred A_kl = a_kl - a_k. - a_.l + a_..,
    dCov^2_n(X, Y) = (1/n^2) sum_kl A_kl B_kl,   dCor^2 = dCov^2(X,Y) / sqrt(dCov^2(X,X) dCov^2(Y,Y)).
The bias-corrected (U-centred) version (Szekely and Rizzo 2014) uses, for k != l,
    Ã_kl = a_kl - a_k./(n-2) - a_.l/(n-2) + a_../((n-1)(n-2))   (sums, not means), Ã_kk = 0,
    dCov^2_u = sum_{k != l} Ã_kl B̃_kl / (n(n-3)),   dCor^2_u = dCov^2_u(X,Y) / sqrt(dCov^2_u(X,X) dCov^2_u(Y,Y)),
an unbiased estimate whose value is near zero (and may be negative) under independence.

`neuron_distance_correlation` computes dCor between every scalar column of X and every
scalar column of Y at once: with the flattened double-centred matrices of the columns as rows,
the n^2 sums become one matrix product, done in chunks of columns and of distance-matrix rows so
that no more than `memory_bytes` of distance-matrix blocks are held at a time.
"""

from __future__ import annotations

import torch


def _as2d(x: torch.Tensor) -> torch.Tensor:
    x = torch.as_tensor(x)
    return x[:, None] if x.dim() == 1 else x


def distance_matrix(x: torch.Tensor) -> torch.Tensor:
    """Euclidean distances between the rows of x (n x p)."""
    x = _as2d(x)
    diff = x[:, None, :] - x[None, :, :]
    return diff.pow(2).sum(-1).sqrt()


def double_centre(a: torch.Tensor) -> torch.Tensor:
    return a - a.mean(0, keepdim=True) - a.mean(1, keepdim=True) + a.mean()


def u_centre(a: torch.Tensor) -> torch.Tensor:
    n = a.shape[0]
    if n < 4:
        raise ValueError(f"the bias-corrected distance covariance needs at least 4 samples, got {n}")
    rows = a.sum(1, keepdim=True) / (n - 2)
    cols = a.sum(0, keepdim=True) / (n - 2)
    total = a.sum() / ((n - 1) * (n - 2))
    out = a - rows - cols + total
    out.fill_diagonal_(0.0)
    return out


def distance_covariance_sqr(x, y, bias_corrected: bool = False) -> torch.Tensor:
    ax, by = distance_matrix(x), distance_matrix(y)
    n = ax.shape[0]
    if bias_corrected:
        return (u_centre(ax) * u_centre(by)).sum() / (n * (n - 3))
    return (double_centre(ax) * double_centre(by)).mean()


def distance_correlation_sqr(x, y, bias_corrected: bool = False) -> torch.Tensor:
    """dCor^2 (or its bias-corrected version); 0 when either sample is constant."""
    x, y = _as2d(torch.as_tensor(x)), _as2d(torch.as_tensor(y))
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y need the same number of samples, got {x.shape[0]} and {y.shape[0]}")
    ax, by = distance_matrix(x), distance_matrix(y)
    n = ax.shape[0]
    if bias_corrected:
        A, B = u_centre(ax), u_centre(by)
        norm = n * (n - 3)
        xy, xx, yy = (A * B).sum() / norm, (A * A).sum() / norm, (B * B).sum() / norm
    else:
        A, B = double_centre(ax), double_centre(by)
        xy, xx, yy = (A * B).mean(), (A * A).mean(), (B * B).mean()
    denom = (xx * yy).sqrt()
    return torch.where(denom > 0, xy / denom.clamp_min(torch.finfo(denom.dtype).tiny), torch.zeros_like(xy))


def distance_correlation(x, y) -> torch.Tensor:
    """dCor (the square root of dCor^2, as `dcor.distance_correlation`)."""
    return distance_correlation_sqr(x, y).clamp_min(0).sqrt()


# ---- neuron level ------------------------------------------------------------------------------

def _row_means(x: torch.Tensor, budget: int) -> torch.Tensor:
    """Mean over l of |x_k - x_l| for every column (x: n x d) -> (n x d), rows of k at a time."""
    n, d = x.shape
    rows = max(1, min(n, budget // max(1, n * d)))
    out = torch.empty_like(x)
    for r0 in range(0, n, rows):
        blk = x[r0:r0 + rows]
        out[r0:r0 + rows] = (blk[:, None, :] - x[None, :, :]).abs_().mean(1)
    return out


def _centred_block(x: torch.Tensor, row_mean: torch.Tensor, grand: torch.Tensor, r0: int, r1: int,
                   zero_diagonal: bool = False) -> torch.Tensor:
    """Rows r0:r1 of every column's centred distance matrix, as (d, (r1-r0) * n):
    a_kl - row_k - row_l + grand (double centring with means, U-centring with sums / (n-2) and
    a zero diagonal).

    Built column-major in place: one buffer of the block's size (no temporaries beyond it)."""
    d, n = x.shape[1], x.shape[0]
    xt, mt = x.T.contiguous(), row_mean.T.contiguous()               # (d, n)
    a = xt[:, r0:r1, None] - xt[:, None, :]                         # (d, r, n): the only allocation
    a.abs_().sub_(mt[:, r0:r1, None]).sub_(mt[:, None, :]).add_(grand[:, None, None])
    flat = a.view(d, -1)
    if zero_diagonal:
        k = torch.arange(r1 - r0, device=x.device)
        flat[:, k * n + r0 + k] = 0.0
    return flat


def neuron_distance_correlation_sqr(x: torch.Tensor, y: torch.Tensor, memory_bytes: int = 256 * 2**20,
                                    bias_corrected: bool = False, eps: float = 1e-12) -> torch.Tensor:
    """dCor^2(x[:, i], y[:, j]) (or the bias-corrected dCor^2_u, which can be negative) for every
    column i of x (n x p) and j of y (n x q): a (p x q) matrix.

    Chunked over columns of x, columns of y and rows of the distance matrices, so the blocks of
    centred distances held at once stay within `memory_bytes` (besides O(n (p + q)) vectors
    and the p x q result). Computed on x's device (a GPU when the caller puts x there); the
    result is returned on the CPU."""
    x, y = _as2d(x), _as2d(y)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y need the same number of samples, got {x.shape[0]} and {y.shape[0]}")
    dtype = torch.promote_types(x.dtype, torch.float32)
    x, y = x.to(dtype), y.to(dtype).to(x.device)
    n, p = x.shape
    q = y.shape[1]
    if bias_corrected and n < 4:
        raise ValueError(f"the bias-corrected distance covariance needs at least 4 samples, got {n}")
    item = torch.finfo(dtype).bits // 8
    # at most two blocks of cols x rows x n entries are alive at once (one of x, one of y);
    # they get half of the budget, the other half is headroom for the allocator and the row means
    budget = max(1, memory_bytes // item)
    rows, cols = _block_shape(n, p, q, budget)
    cx, cy = min(p, cols), min(q, cols)
    rx, ry = _row_means(x, budget // 4), _row_means(y, budget // 4)
    gx, gy = rx.mean(0), ry.mean(0)
    if bias_corrected:  # U-centring: row sums / (n - 2), grand sum / ((n - 1)(n - 2)); the 1/(n(n-3)) cancels
        rx, ry = rx * (n / (n - 2)), ry * (n / (n - 2))
        gx, gy = gx * (n * n / ((n - 1) * (n - 2))), gy * (n * n / ((n - 1) * (n - 2)))
    zd = bias_corrected
    cov = torch.zeros(p, q, dtype=dtype, device=x.device)
    var_x = torch.zeros(p, dtype=dtype, device=x.device)
    var_y = torch.zeros(q, dtype=dtype, device=x.device)
    single_y = q <= cy
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        if single_y:
            B_all = _centred_block(y, ry, gy, r0, r1, zd)
            var_y += torch.linalg.vector_norm(B_all, dim=1).square()
        else:
            for j0 in range(0, q, cy):
                B = _centred_block(y[:, j0:j0 + cy], ry[:, j0:j0 + cy], gy[j0:j0 + cy], r0, r1, zd)
                var_y[j0:j0 + cy] += torch.linalg.vector_norm(B, dim=1).square()
                B = None  # free before the next block is built
        for i0 in range(0, p, cx):
            A = _centred_block(x[:, i0:i0 + cx], rx[:, i0:i0 + cx], gx[i0:i0 + cx], r0, r1, zd)
            var_x[i0:i0 + cx] += torch.linalg.vector_norm(A, dim=1).square()
            if single_y:
                cov[i0:i0 + cx] += A @ B_all.T
            else:
                for j0 in range(0, q, cy):
                    B = _centred_block(y[:, j0:j0 + cy], ry[:, j0:j0 + cy], gy[j0:j0 + cy], r0, r1, zd)
                    cov[i0:i0 + cx, j0:j0 + cy] += A @ B.T
                    B = None
            A = None
        B_all = None
    denom = (var_x[:, None] * var_y[None, :]).sqrt()
    return torch.where(denom > 0, cov / denom.clamp_min(eps), torch.zeros_like(cov)).cpu()


def neuron_distance_correlation(x: torch.Tensor, y: torch.Tensor, memory_bytes: int = 256 * 2**20,
                                eps: float = 1e-12) -> torch.Tensor:
    """dCor(x[:, i], y[:, j]) (plain, as `dcor.distance_correlation`) for every pair of columns."""
    return neuron_distance_correlation_sqr(x, y, memory_bytes, False, eps).clamp_min(0).sqrt()


def layer_dependence(xs: list[torch.Tensor], ys: list[torch.Tensor]) -> torch.Tensor:
    """Bias-corrected dCor^2 between every pair of layer representations (L x M)."""
    out = torch.zeros(len(xs), len(ys), dtype=torch.float64)
    for i, x in enumerate(xs):
        for j, y in enumerate(ys):
            out[i, j] = distance_correlation_sqr(x.double(), y.double(), bias_corrected=True)
    return out


def _block_shape(n: int, p: int, q: int, budget: int) -> tuple[int, int]:
    """Rows of the distance matrices and columns per block so that two blocks fit in budget / 2."""
    half = max(1, budget // 2)
    cols = half // (2 * n * n)
    if cols >= 1:
        return n, min(max(p, q), cols)
    return max(1, half // (2 * n)), 1        # even one whole column does not fit: chunk its rows


def peak_block_bytes(n: int, p: int, q: int, memory_bytes: int, dtype=torch.float32) -> int:
    """Bytes of the two largest centred-distance blocks `neuron_distance_correlation` holds at once."""
    item = torch.finfo(dtype).bits // 8
    rows, cols = _block_shape(n, p, q, max(1, memory_bytes // item))
    return int((min(p, cols) + min(q, cols)) * rows * n * item)


__all__ = ["distance_matrix", "double_centre", "u_centre", "distance_covariance_sqr", "distance_correlation_sqr",
           "distance_correlation", "neuron_distance_correlation_sqr", "neuron_distance_correlation", "layer_dependence", "peak_block_bytes"]
