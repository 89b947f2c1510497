// softmax.cu: row-wise softmax and layer normalization of a (rows x cols) float32 matrix,
// row-major and contiguous. One block of ROW_BLOCK threads per row: the threads stride over
// the row's columns, then combine their partial results with a shared-memory tree
// reduction. The reduction order is fixed (no atomics), so results are deterministic.
// Launch: grid (rows), block (ROW_BLOCK); the wrappers always use exactly ROW_BLOCK threads.
// out may alias x: each element is read by the thread that later writes it.

#define ROW_BLOCK 256

// Sum of v over the block, returned to every thread. red must hold ROW_BLOCK floats.
static __device__ __forceinline__ float block_sum(float v, float* red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = ROW_BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();  // every thread has read red[0] before red is reused
    return total;
}

// Maximum of v over the block, returned to every thread.
static __device__ __forceinline__ float block_max(float v, float* red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = ROW_BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();
    return total;
}

// softmax_rows: out[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
// Subtracting the row max first keeps expf from overflowing (the numerically stable form).
extern "C" __global__ void softmax_rows(const float* x, float* out, int rows, int cols)
{
    __shared__ float red[ROW_BLOCK];
    const int row = blockIdx.x;
    if (row >= rows) return;  // uniform across the block, so no __syncthreads is skipped
    const float* xr = x + (long long)row * cols;
    float* yr = out + (long long)row * cols;

    float m = -__int_as_float(0x7f800000);  // -infinity
    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) m = fmaxf(m, xr[j]);
    m = block_max(m, red);

    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) s += expf(xr[j] - m);
    const float inv = 1.0f / block_sum(s, red);

    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) yr[j] = expf(xr[j] - m) * inv;
}

// layernorm_rows: out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta,
// with the biased variance of the row (as torch.nn.LayerNorm). Two passes over the row
// (mean, then squared deviations) rather than E[x^2] - E[x]^2, which cancels badly.
extern "C" __global__ void layernorm_rows(const float* x, const float* gamma, const float* beta,
                                          float* out, int rows, int cols, float eps)
{
    __shared__ float red[ROW_BLOCK];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (long long)row * cols;
    float* yr = out + (long long)row * cols;

    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) s += xr[j];
    const float mean = block_sum(s, red) / (float)cols;

    float d2 = 0.0f;
    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) {
        const float d = xr[j] - mean;
        d2 += d * d;
    }
    const float var = block_sum(d2, red) / (float)cols;
    const float inv_std = 1.0f / sqrtf(var + eps);

    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) {
        yr[j] = (xr[j] - mean) * inv_std * gamma[j] + beta[j];
    }
}
