// stencil.cu: one Jacobi iteration of the 2-D Laplace equation on an (ny x nx) float32 grid,
// row-major and contiguous. Interior points become the mean of their four neighbours,
//   dst[j, i] = 0.25 * (src[j-1, i] + src[j+1, i] + src[j, i-1] + src[j, i+1]);
// boundary points are copied unchanged (fixed, Dirichlet boundary), so ping-ponging two
// buffers keeps the boundary in both. src and dst must not alias.
// Each thread walks JACOBI_ROWS consecutive rows of one column, keeping the column's north,
// centre and south values in registers (each loaded once), so a point costs one new load
// from its column plus its west and east neighbours (which the neighbouring lanes loaded:
// cache hits), and every thread has several independent loads in flight.
// Launch: block (32, 8), grid (ceil(nx / 32), ceil(ny / (8 * JACOBI_ROWS))).
#define JACOBI_ROWS 8

extern "C" __global__ void jacobi_step(const float* src, float* dst, int ny, int nx)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // column
    const int j0 = (blockIdx.y * blockDim.y + threadIdx.y) * JACOBI_ROWS;  // first row
    if (i >= nx || j0 >= ny) return;
    const bool edge_column = (i == 0 || i == nx - 1);
    float north = j0 > 0 ? src[(long long)(j0 - 1) * nx + i] : 0.0f;
    float centre = src[(long long)j0 * nx + i];
#pragma unroll
    for (int r = 0; r < JACOBI_ROWS; ++r) {
        const int j = j0 + r;
        if (j >= ny) break;
        const long long idx = (long long)j * nx + i;
        const float south = j + 1 < ny ? src[idx + nx] : 0.0f;
        if (edge_column || j == 0 || j == ny - 1) {
            dst[idx] = centre;
        } else {
            // Summation order (north + south) + (west + east) is spelled out so a NumPy
            // reference can reproduce it exactly.
            const float ns = north + south;
            const float we = src[idx - 1] + src[idx + 1];
            dst[idx] = 0.25f * (ns + we);
        }
        north = centre;
        centre = south;
    }
}
