// stencil.cu: one Jacobi iteration of the 2-D Laplace equation on an (ny x nx) float32 grid,
// row-major and contiguous. Interior points become the mean of their four neighbours,
//   dst[j, i] = 0.25 * (src[j-1, i] + src[j+1, i] + src[j, i-1] + src[j, i+1]);
// boundary points are copied unchanged (fixed, Dirichlet boundary), so ping-ponging two
// buffers keeps the boundary in both. src and dst must not alias.
// Launch: block (16, 16), grid (ceil(nx / 16), ceil(ny / 16)), one point per thread.
extern "C" __global__ void jacobi_step(const float* src, float* dst, int ny, int nx)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // column
    const int j = blockIdx.y * blockDim.y + threadIdx.y;  // row
    if (i >= nx || j >= ny) return;
    const long long idx = (long long)j * nx + i;
    if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
        dst[idx] = src[idx];
        return;
    }
    // Summation order (north + south) + (west + east) is spelled out so a NumPy reference
    // can reproduce it exactly.
    const float ns = src[idx - nx] + src[idx + nx];
    const float we = src[idx - 1] + src[idx + 1];
    dst[idx] = 0.25f * (ns + we);
}
