// elementwise.cu: tiny element-wise kernels; their launch cost dwarfs their work, which is
// exactly the regime CUDA graphs are for. float32, contiguous. Launch: 1-D, 256 threads per
// block, ceil(n / 256) blocks, one element per thread. The "4" variants do the same arithmetic
// on four elements per thread through float4 (16-byte aligned arrays: the wrappers check), the
// last n % 4 elements by the first threads of block 0: ceil(n / 4 / 256) blocks.

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

// add_mod1: x = frac(x + c), in place. A rotation on [0, 1): values stay bounded however many
// times it runs (a chain of thousands of launches, replayed thousands of times, never
// overflows or converges), and floorf is exact, so NumPy reproduces it bit for bit.
static __device__ __forceinline__ float frac_add(float x, float c)
{
    const float v = x + c;
    return v - floorf(v);
}

extern "C" __global__ void add_mod1(float* x, float c, int n)
{
    WAIT_FOR_PRIOR_GRID();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    x[i] = frac_add(x[i], c);
}

extern "C" __global__ void add_mod1_4(float* x, float c, int n)
{
    WAIT_FOR_PRIOR_GRID();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int n4 = n >> 2;
    if (i < n4) {
        float4 v = reinterpret_cast<float4*>(x)[i];
        v = make_float4(frac_add(v.x, c), frac_add(v.y, c), frac_add(v.z, c), frac_add(v.w, c));
        reinterpret_cast<float4*>(x)[i] = v;
    }
    if (blockIdx.x == 0 && threadIdx.x < (n & 3)) {
        const int t = 4 * n4 + threadIdx.x;
        x[t] = frac_add(x[t], c);
    }
}

// axpby: out = a * x + b * y. out may alias x or y (each thread reads before it writes
// its own elements), which makes it an in-place accumulate: axpby(1, out, 1, t, out).
extern "C" __global__ void axpby(float a, const float* x, float b, const float* y,
                                 float* out, int n)
{
    WAIT_FOR_PRIOR_GRID();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = a * x[i] + b * y[i];
}

extern "C" __global__ void axpby4(float a, const float* x, float b, const float* y,
                                  float* out, int n)
{
    WAIT_FOR_PRIOR_GRID();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int n4 = n >> 2;
    if (i < n4) {
        const float4 u = reinterpret_cast<const float4*>(x)[i];
        const float4 v = reinterpret_cast<const float4*>(y)[i];
        reinterpret_cast<float4*>(out)[i] = make_float4(
            a * u.x + b * v.x, a * u.y + b * v.y, a * u.z + b * v.z, a * u.w + b * v.w);
    }
    if (blockIdx.x == 0 && threadIdx.x < (n & 3)) {
        const int t = 4 * n4 + threadIdx.x;
        out[t] = a * x[t] + b * y[t];
    }
}
