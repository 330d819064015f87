// C baseline for pygraphrt's benchmarks: the same measurements as run.py, in C++.
// Usage: launch_bench [NODES]  (the build/instantiate graphs' size, default 10000: the size
// run.py builds, so the per-node figures compare graphs of one size).
// Prints one line per measurement: its name, then every trial's time per call / per node (us);
// run.py pools the trials of several runs.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

static double now_us() {
    return std::chrono::duration<double, std::micro>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
}

__global__ void tiny(float *x) { if (threadIdx.x == 0) x[0] += 1.0f; }

template <class F> static std::vector<double> trials(int n, int items, F f) {
    std::vector<double> out;
    for (int t = 0; t < n + 1; t++) {
        double t0 = now_us();
        f(items);
        double t1 = now_us();
        if (t) out.push_back((t1 - t0) / items);
        cudaDeviceSynchronize();
    }
    return out;
}

static void report(const char *name, const std::vector<double> &v) {
    std::printf("%s", name);
    for (double x : v) std::printf(" %.4f", x);
    std::printf("\n");
}

int main(int argc, char **argv) {
    const int nodes = argc > 1 ? std::atoi(argv[1]) : 10000;
    if (nodes < 1) {
        std::fprintf(stderr, "launch_bench: NODES must be a positive integer, got '%s'\n", argv[1]);
        return 2;
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *x;
    CK(cudaMalloc(&x, 4));
    // one empty node
    cudaGraph_t g; cudaGraphExec_t ge; cudaGraphNode_t n;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphAddEmptyNode(&n, g, nullptr, 0));
    CK(cudaGraphInstantiateWithFlags(&ge, g, 0));
    report("launch_empty", trials(7, 1000, [&](int k) { for (int i = 0; i < k; i++) cudaGraphLaunch(ge, s); }));
    // one small kernel
    cudaGraph_t gk; cudaGraphExec_t gke;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    tiny<<<1, 32, 0, s>>>(x);
    CK(cudaStreamEndCapture(s, &gk));
    CK(cudaGraphInstantiateWithFlags(&gke, gk, 0));
    report("launch_kernel", trials(7, 1000, [&](int k) { for (int i = 0; i < k; i++) cudaGraphLaunch(gke, s); }));
    cudaStreamCaptureStatus st;
    report("stream_launch_tiny", trials(21, 256, [&](int k) { for (int i = 0; i < k; i++) tiny<<<1, 32, 0, s>>>(x); }));
    report("is_capturing", trials(7, 100000, [&](int k) { for (int i = 0; i < k; i++) cudaStreamIsCapturing(s, &st); }));
    // build: chain and fan-out of `nodes` empty nodes; instantiate
    for (int fan = 0; fan < 2; fan++) {
        std::vector<double> build, inst;
        for (int t = 0; t < 5; t++) {
            cudaGraph_t b; CK(cudaGraphCreate(&b, 0));
            cudaGraphNode_t root, prev; CK(cudaGraphAddEmptyNode(&root, b, nullptr, 0)); prev = root;
            double t0 = now_us();
            for (int i = 0; i < nodes; i++) {
                cudaGraphNode_t nn;
                cudaGraphAddEmptyNode(&nn, b, fan ? &root : &prev, 1);
                prev = nn;
            }
            double t1 = now_us();
            cudaGraphExec_t be; CK(cudaGraphInstantiateWithFlags(&be, b, 0));
            double t2 = now_us();
            build.push_back((t1 - t0) / nodes); inst.push_back((t2 - t1) / nodes);
            cudaGraphExecDestroy(be); cudaGraphDestroy(b);
        }
        report(fan ? "build_fanout" : "build_chain", build);
        report(fan ? "instantiate_fanout" : "instantiate_chain", inst);
    }
    // 1000 tiny kernels: stream vs graph replay
    report("kernels_stream", trials(5, 1000, [&](int k) { for (int i = 0; i < k; i++) tiny<<<1, 32, 0, s>>>(x); cudaStreamSynchronize(s); }));
    cudaGraph_t g1000; cudaGraphExec_t e1000;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 1000; i++) tiny<<<1, 32, 0, s>>>(x);
    CK(cudaStreamEndCapture(s, &g1000));
    CK(cudaGraphInstantiateWithFlags(&e1000, g1000, 0));
    report("kernels_graph", trials(5, 1000, [&](int k) { cudaGraphLaunch(e1000, s); cudaStreamSynchronize(s); }));
    return 0;
}
