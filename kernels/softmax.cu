// softmax.cu: row-wise softmax and layer normalization of a (rows x cols) float32 matrix,
// row-major and contiguous. One block of ROW_BLOCK threads per row. When the row fits
// (cols % 4 == 0, 16-byte aligned, cols <= ROW_BLOCK * 4 * ROW_VECS = 8192), each thread
// reads its part of the row once, as float4s kept in registers, and every pass works on the
// registers: the row crosses the memory bus once in and once out, which is what the kernels
// are bound by. Other rows are read from memory on each pass. Block-wide sums and maxima go
// through warp shuffles and then the 8 warps' results in warp order: a fixed order (no
// atomics), so results are deterministic.
// Launch: grid (rows), block (ROW_BLOCK); the wrappers always use exactly ROW_BLOCK threads.
// out may alias x: each element is read by the thread that later writes it.

// Every kernel in this file begins with WAIT_FOR_PRIOR_GRID(). Under capture, accelgraph
// launches such kernels with programmatic dependencies (accelgraph_cli/cuda/launch.py), so
// one may start while the kernel before it is still finishing: the wait holds each thread
// until that kernel has completed and its writes are visible. Launched any other way, it
// returns at once.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WAIT_FOR_PRIOR_GRID() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define WAIT_FOR_PRIOR_GRID() ((void)0)
#endif

#define ROW_BLOCK 256
#define ROW_WARPS (ROW_BLOCK / 32)
#define ROW_VECS 8

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;  // the butterfly leaves the same bits in every lane (a + b == b + a)
}

static __device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum of v over the block, returned to every thread. red must hold ROW_WARPS floats.
static __device__ __forceinline__ float block_sum(float v, float* red)
{
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = red[0];
#pragma unroll
    for (int w = 1; w < ROW_WARPS; ++w) total += red[w];
    __syncthreads();  // every thread has read red before it is reused
    return total;
}

// Maximum of v over the block, returned to every thread.
static __device__ __forceinline__ float block_max(float v, float* red)
{
    v = warp_max(v);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = red[0];
#pragma unroll
    for (int w = 1; w < ROW_WARPS; ++w) total = fmaxf(total, red[w]);
    __syncthreads();
    return total;
}

static __device__ __forceinline__ bool row_fits(const void* a, const void* b, int cols)
{
    return (cols & 3) == 0 && cols <= ROW_BLOCK * 4 * ROW_VECS &&
           ((((unsigned long long)a) | ((unsigned long long)b)) & 15) == 0;
}

// The softmax of a row whose float4s this block holds in registers (thread t has float4s
// t + j * ROW_BLOCK of the nv, j < VECS; m its maximum over them), written to yr. For a row
// that fits in fewer than VECS, the same operations whatever VECS is.
template <int VECS>
static __device__ __forceinline__ void softmax_registers(float4 (&v)[VECS], float m, int nv,
                                                         float* yr, float* red)
{
    m = block_max(m, red);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < VECS; ++j) {
        if (threadIdx.x + j * ROW_BLOCK < nv) {
            v[j].x = expf(v[j].x - m);
            v[j].y = expf(v[j].y - m);
            v[j].z = expf(v[j].z - m);
            v[j].w = expf(v[j].w - m);
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    const float inv = 1.0f / block_sum(s, red);
#pragma unroll
    for (int j = 0; j < VECS; ++j) {
        const int idx = threadIdx.x + j * ROW_BLOCK;
        if (idx < nv) {
            reinterpret_cast<float4*>(yr)[idx] =
                make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv);
        }
    }
}

// softmax_rows: out[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
// Subtracting the row max first keeps expf from overflowing (the numerically stable form).
extern "C" __global__ void __launch_bounds__(ROW_BLOCK) softmax_rows(
    const float* x, float* out, int rows, int cols)
{
    WAIT_FOR_PRIOR_GRID();
    __shared__ float red[ROW_WARPS];
    const int row = blockIdx.x;
    if (row >= rows) return;  // uniform across the block, so no __syncthreads is skipped
    const float* xr = x + (long long)row * cols;
    float* yr = out + (long long)row * cols;
    const float neg_inf = -__int_as_float(0x7f800000);

    if (row_fits(x, out, cols)) {
        const int nv = cols >> 2;
        float4 v[ROW_VECS];
        float m = neg_inf;
#pragma unroll
        for (int j = 0; j < ROW_VECS; ++j) {
            const int idx = threadIdx.x + j * ROW_BLOCK;
            if (idx < nv) {
                v[j] = reinterpret_cast<const float4*>(xr)[idx];
                m = fmaxf(m, fmaxf(fmaxf(v[j].x, v[j].y), fmaxf(v[j].z, v[j].w)));
            }
        }
        softmax_registers(v, m, nv, yr, red);
        return;
    }

    float m = neg_inf;
    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) m = fmaxf(m, xr[j]);
    m = block_max(m, red);

    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) s += expf(xr[j] - m);
    const float inv = 1.0f / block_sum(s, red);

    for (int j = threadIdx.x; j < cols; j += ROW_BLOCK) yr[j] = expf(xr[j] - m) * inv;
}

// sgemm_splitk_reduce_softmax: C = the S slices of partial (S x M x N) added in slice order,
// which is what gemm.cu's sgemm_splitk_reduce writes for alpha 1 and beta 0 (the same adds in
// the same order: the same bits; keep the two loops alike), and P = the row-wise softmax of C,
// in one launch (a decode step's logits and probabilities: kernels.sgemm_softmax). One block
// per row, which keeps its float4s of C in registers for softmax_registers: P has
// softmax_rows' bits for that row (but not softmax_rows_warp's, which adds the row's sum in
// another order). In mlp_decode's graph on an H100 it ran in 3.7 us, against 2.3 for the
// reduction and 2.5 for softmax_rows_warp after it (CUPTI; with ROW_VECS = 8 float4s a thread
// rather than 4, 4.0 us). Dropped after trials (bench/HISTORY.md, 12-06): all 32 slices'
// loads issued before the adds (no faster in mlp_decode's step, 0.65-1.6 us slower a launch
// at 4 to 17 slices), a row spread over a cluster of 8 blocks, and one block of 1,024
// threads a row (both slower). Needs S >= 1, N % 4 == 0, N <= 4 * ROW_BLOCK * REDUCE_VECS,
// and 16-byte aligned partial, C and P. Launch: grid (M), block ROW_BLOCK.
#define REDUCE_VECS 4

extern "C" __global__ void __launch_bounds__(ROW_BLOCK) sgemm_splitk_reduce_softmax(
    const float* __restrict__ partial, float* __restrict__ C, float* __restrict__ P, int M,
    int N, int S)
{
    WAIT_FOR_PRIOR_GRID();
    __shared__ float red[ROW_WARPS];
    const int row = blockIdx.x;
    const int nv = N >> 2;
    const long long mn = (long long)M * N;
    float4 v[REDUCE_VECS];
    float m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int j = 0; j < REDUCE_VECS; ++j) {
        const int q = threadIdx.x + j * ROW_BLOCK;
        if (q < nv) {
            const long long i = (long long)row * N + 4 * q;
            float4 s = *reinterpret_cast<const float4*>(partial + i);
            for (int z0 = 1; z0 < S; z0 += 16) {  // the slices' loads asked for 16 at a time
                float4 t[16];
#pragma unroll
                for (int z = 0; z < 16; ++z) {
                    t[z] = (z0 + z < S)
                               ? *reinterpret_cast<const float4*>(partial + (z0 + z) * mn + i)
                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                }
#pragma unroll
                for (int z = 0; z < 16; ++z) {
                    if (z0 + z < S) {
                        s.x += t[z].x;
                        s.y += t[z].y;
                        s.z += t[z].z;
                        s.w += t[z].w;
                    }
                }
            }
            *reinterpret_cast<float4*>(C + i) = s;
            v[j] = s;
            m = fmaxf(m, fmaxf(fmaxf(s.x, s.y), fmaxf(s.z, s.w)));
        }
    }
    softmax_registers(v, m, nv, P + (long long)row * N, red);
}

// layernorm_rows: out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta,
// with the biased variance of the row (as torch.nn.LayerNorm). Two passes over the row
// (mean, then squared deviations) rather than E[x^2] - E[x]^2, which cancels badly.
extern "C" __global__ void __launch_bounds__(ROW_BLOCK) layernorm_rows(
    const float* x, const float* gamma, const float* beta, float* out, int rows, int cols,
    float eps)
{
    WAIT_FOR_PRIOR_GRID();
    __shared__ float red[ROW_WARPS];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (long long)row * cols;
    float* yr = out + (long long)row * cols;

    if (row_fits(x, out, cols) && row_fits(gamma, beta, cols)) {
        const int nv = cols >> 2;
        float4 v[ROW_VECS];
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < ROW_VECS; ++j) {
            const int idx = threadIdx.x + j * ROW_BLOCK;
            if (idx < nv) {
                v[j] = reinterpret_cast<const float4*>(xr)[idx];
                s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
            }
        }
        const float mean = block_sum(s, red) / (float)cols;
        float d2 = 0.0f;
#pragma unroll
        for (int j = 0; j < ROW_VECS; ++j) {
            if (threadIdx.x + j * ROW_BLOCK < nv) {
                v[j].x -= mean;
                v[j].y -= mean;
                v[j].z -= mean;
                v[j].w -= mean;
                d2 += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
            }
        }
        const float inv_std = 1.0f / sqrtf(block_sum(d2, red) / (float)cols + eps);
#pragma unroll
        for (int j = 0; j < ROW_VECS; ++j) {
            const int idx = threadIdx.x + j * ROW_BLOCK;
            if (idx < nv) {
                const float4 g = reinterpret_cast<const float4*>(gamma)[idx];
                const float4 b = reinterpret_cast<const float4*>(beta)[idx];
                reinterpret_cast<float4*>(yr)[idx] = make_float4(
                    v[j].x * inv_std * g.x + b.x, v[j].y * inv_std * g.y + b.y,
                    v[j].z * inv_std * g.z + b.z, v[j].w * inv_std * g.w + b.w);
            }
        }
        return;
    }

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

// ---------------------------------------------------------------------------------------------
// Rows of at most WARP_COLS columns (cols % 4 == 0, 16-byte aligned: the wrappers check) are
// done one warp per row, ROW_WARPS rows per block: each lane holds up to WARP_VECS float4s of
// the row in registers and every reduction is a warp shuffle, with no block-wide barrier.
// Same formulas as above; a row always takes the same path (chosen by cols and alignment),
// so results stay deterministic. Launch: grid ceil(rows / ROW_WARPS), block ROW_BLOCK.
#define WARP_VECS 8
#define WARP_COLS (32 * 4 * WARP_VECS)

extern "C" __global__ void __launch_bounds__(ROW_BLOCK) softmax_rows_warp(
    const float* x, float* out, int rows, int cols)
{
    WAIT_FOR_PRIOR_GRID();
    const int row = blockIdx.x * ROW_WARPS + (threadIdx.x >> 5);
    if (row >= rows) return;  // the whole warp leaves together; no block barrier follows
    const int lane = threadIdx.x & 31;
    const float4* xr = reinterpret_cast<const float4*>(x + (long long)row * cols);
    float4* yr = reinterpret_cast<float4*>(out + (long long)row * cols);
    const int nv = cols >> 2;
    float4 v[WARP_VECS];
    float m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int j = 0; j < WARP_VECS; ++j) {
        if (lane + 32 * j < nv) {
            v[j] = xr[lane + 32 * j];
            m = fmaxf(m, fmaxf(fmaxf(v[j].x, v[j].y), fmaxf(v[j].z, v[j].w)));
        }
    }
    m = warp_max(m);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < WARP_VECS; ++j) {
        if (lane + 32 * j < nv) {
            v[j].x = expf(v[j].x - m);
            v[j].y = expf(v[j].y - m);
            v[j].z = expf(v[j].z - m);
            v[j].w = expf(v[j].w - m);
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    const float inv = 1.0f / warp_sum(s);
#pragma unroll
    for (int j = 0; j < WARP_VECS; ++j) {
        if (lane + 32 * j < nv) {
            yr[lane + 32 * j] = make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv);
        }
    }
}

extern "C" __global__ void __launch_bounds__(ROW_BLOCK) layernorm_rows_warp(
    const float* x, const float* gamma, const float* beta, float* out, int rows, int cols,
    float eps)
{
    WAIT_FOR_PRIOR_GRID();
    const int row = blockIdx.x * ROW_WARPS + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int lane = threadIdx.x & 31;
    const float4* xr = reinterpret_cast<const float4*>(x + (long long)row * cols);
    float4* yr = reinterpret_cast<float4*>(out + (long long)row * cols);
    const int nv = cols >> 2;
    float4 v[WARP_VECS];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < WARP_VECS; ++j) {
        if (lane + 32 * j < nv) {
            v[j] = xr[lane + 32 * j];
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    const float mean = warp_sum(s) / (float)cols;
    float d2 = 0.0f;
#pragma unroll
    for (int j = 0; j < WARP_VECS; ++j) {
        if (lane + 32 * j < nv) {
            v[j].x -= mean;
            v[j].y -= mean;
            v[j].z -= mean;
            v[j].w -= mean;
            d2 += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
        }
    }
    const float inv_std = 1.0f / sqrtf(warp_sum(d2) / (float)cols + eps);
#pragma unroll
    for (int j = 0; j < WARP_VECS; ++j) {
        const int idx = lane + 32 * j;
        if (idx < nv) {
            const float4 g = reinterpret_cast<const float4*>(gamma)[idx];
            const float4 b = reinterpret_cast<const float4*>(beta)[idx];
            yr[idx] = make_float4(v[j].x * inv_std * g.x + b.x, v[j].y * inv_std * g.y + b.y,
                                  v[j].z * inv_std * g.z + b.z, v[j].w * inv_std * g.w + b.w);
        }
    }
}
