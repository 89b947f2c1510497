// saxpy.cu: the BLAS level-1 classic, y = a * x + y (float32, contiguous, in place on y).
// Launch: 1-D, 256 threads per block, any grid size: a grid-stride loop covers all n
// elements, so the wrapper can cap the grid and one kernel still handles huge vectors.

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

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
    WAIT_FOR_PRIOR_GRID();
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}

// saxpy4: the same arithmetic, four elements per thread through float4 (x and y 16-byte
// aligned: the wrapper checks), a grid-stride loop over the n / 4 vectors; the last n % 4
// elements are done by the first threads of block 0.
extern "C" __global__ void saxpy4(float a, const float* x, float* y, int n)
{
    WAIT_FOR_PRIOR_GRID();
    const int n4 = n >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 u = x4[i];
        float4 v = y4[i];
        v.x = a * u.x + v.x;
        v.y = a * u.y + v.y;
        v.z = a * u.z + v.z;
        v.w = a * u.w + v.w;
        y4[i] = v;
    }
    if (blockIdx.x == 0 && threadIdx.x < (n & 3)) {
        const int t = 4 * n4 + threadIdx.x;
        y[t] = a * x[t] + y[t];
    }
}
