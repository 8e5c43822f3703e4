// v41sim_measure: the measuring harness. Built with the CUDA toolkit and
// CMake alone (the GPU machine reaches no package registry).
//
// For each kernel: run its correctness check against the CPU reference first
// and refuse to time it if the check fails; then time it with CUDA events
// after warm-up, rotating through buffers larger than L2, and write one CSV
// row per shape (validation/measurements/README.md) with achieved GB/s and
// the fraction of the measured copy bandwidth. The file opens with metadata:
// GPU name, SMs, clocks, memory, driver, CUDA version, date, git commit.
//
//   v41sim_measure --out validation/measurements/h200 [--quick]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/sparse_decode_cuda.h"
#include "kernels/checks/device_checks.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_timer.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/compress/compress_pool.h"
#include "kernels/engram/engram_gather.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/harness/device_copy.cuh"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/indexer_reference.h"
#include "kernels/kv_quant/mxfp4_kv_cuda.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"
#include "kernels/mhc/mhc_mixing.h"

#ifndef V41SIM_GIT_COMMIT
#define V41SIM_GIT_COMMIT "unknown"
#endif

namespace v41sim::kernels {
namespace {

constexpr int kWarmup = 5;
constexpr int kRuns = 50;
constexpr int64_t kDim = kLatentDim;  // V4.1 compressed KV latent

struct Device {
  cudaDeviceProp props{};
  int sms = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int l2_bytes = 0;
  int driver = 0;
  int runtime = 0;
};

Device query_device() {
  Device d;
  CUDA_CHECK(cudaGetDeviceProperties(&d.props, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.memory_clock_khz, cudaDevAttrMemoryClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, 0));
  CUDA_CHECK(cudaDriverGetVersion(&d.driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime));
  return d;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

void write_metadata(std::ofstream& out, const Device& d) {
  out << "# gpu: " << d.props.name << "\n";
  out << "# sm_count: " << d.sms << "\n";
  out << "# sm_clock_mhz: " << d.clock_khz / 1000 << "\n";
  out << "# memory_clock_mhz: " << d.memory_clock_khz / 1000 << "\n";
  out << "# memory_bytes: " << d.props.totalGlobalMem << "\n";
  out << "# memory_bus_bits: " << d.props.memoryBusWidth << "\n";
  out << "# l2_bytes: " << d.l2_bytes << "\n";
  out << "# driver: " << d.driver << "\n";
  out << "# cuda: " << d.runtime << "\n";
  out << "# date: " << utc_now() << "\n";
  out << "# git_commit: " << V41SIM_GIT_COMMIT << "\n";
  out << "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us\n";
}

void write_row(std::ofstream& out, const char* name, const char* cls, const char* math, int64_t m, int64_t n,
               double flops, double bytes, const TimingStats& t) {
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%s,%lld,%lld,1,1,%.0f,%.0f,%.3f,%.3f,%.3f\n", name, cls, math,
                static_cast<long long>(m), static_cast<long long>(n), flops, bytes, t.median_us, t.min_us,
                t.max_us);
  out << line;
}

// Enough copies of a buffer that rotating through them defeats L2.
int rotation_for(int64_t bytes, const Device& d) {
  const int64_t needed = 4LL * d.l2_bytes / std::max<int64_t>(bytes, 1) + 1;
  return static_cast<int>(std::min<int64_t>(needed, 64));
}

// HBM ceiling: a float4 streaming copy of 1 GiB.
double measure_copy(std::ofstream& out, const Device& d) {
  const int64_t bytes = 1LL << 30;
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float4));
  float4 *in = nullptr, *dst = nullptr;
  CUDA_CHECK(cudaMalloc(&in, bytes));
  CUDA_CHECK(cudaMalloc(&dst, bytes));
  CUDA_CHECK(cudaMemset(in, 1, bytes));
  const TimingStats t = time_kernel([&](int) { launch_copy(in, dst, count, d.sms); }, kWarmup, kRuns);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaFree(in));
  CUDA_CHECK(cudaFree(dst));
  write_row(out, "device_copy", "elementwise", "fp32", bytes / 4096, 4096, 0, 2.0 * bytes, t);
  return 2.0 * static_cast<double>(bytes) / t.median_us / 1e3;  // GB/s
}

void measure_mxfp4(std::ofstream& out, const Device& d, double copy_gbps, bool quick) {
  if (const CheckResult check = check_mxfp4_kv(); !check.ok) {
    std::fprintf(stderr, "mxfp4 kv: %s; not timed\n", check.detail.c_str());
    return;
  }
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{4096, 262144}
            : std::vector<int64_t>{1024, 4096, 16384, 65536, 262144, 1048576};
  for (const int64_t tokens : token_counts) {
    const int64_t in_bytes = tokens * kDim * static_cast<int64_t>(sizeof(float));
    const int64_t out_bytes = tokens * mxfp4_entry_bytes(kDim);
    const int rotation = rotation_for(in_bytes + out_bytes, d);
    std::vector<float*> kv(static_cast<std::size_t>(rotation));
    std::vector<uint8_t*> cache(static_cast<std::size_t>(rotation));
    for (int i = 0; i < rotation; ++i) {
      CUDA_CHECK(cudaMalloc(&kv[static_cast<std::size_t>(i)], in_bytes));
      CUDA_CHECK(cudaMalloc(&cache[static_cast<std::size_t>(i)], out_bytes));
      CUDA_CHECK(cudaMemset(kv[static_cast<std::size_t>(i)], 0, in_bytes));
    }
    const TimingStats q = time_kernel(
        [&](int i) {
          launch_quantize_mxfp4_kv(kv[static_cast<std::size_t>(i % rotation)],
                                   cache[static_cast<std::size_t>(i % rotation)], tokens, kDim);
        },
        kWarmup, kRuns);
    const TimingStats dq = time_kernel(
        [&](int i) {
          launch_dequantize_mxfp4_kv(cache[static_cast<std::size_t>(i % rotation)],
                                     kv[static_cast<std::size_t>(i % rotation)], tokens, kDim);
        },
        kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double bytes = static_cast<double>(in_bytes + out_bytes);
    write_row(out, "mxfp4_kv_quantize", "elementwise", "fp32", tokens, kDim,
              static_cast<double>(tokens * kDim) * 4.0, bytes, q);
    write_row(out, "mxfp4_kv_dequantize", "elementwise", "fp32", tokens, kDim,
              static_cast<double>(tokens * kDim) * 2.0, bytes, dq);
    std::printf(
        "mxfp4 kv %8lld tokens: quantize %.1f us (%.0f%% of copy), dequantize %.1f us (%.0f%% of copy)\n",
        static_cast<long long>(tokens), q.median_us, 100.0 * bytes / q.median_us / 1e3 / copy_gbps,
        dq.median_us, 100.0 * bytes / dq.median_us / 1e3 / copy_gbps);
    for (int i = 0; i < rotation; ++i) {
      CUDA_CHECK(cudaFree(kv[static_cast<std::size_t>(i)]));
      CUDA_CHECK(cudaFree(cache[static_cast<std::size_t>(i)]));
    }
  }
}

// Decode-shaped indexer: a few queries against every visible compressed position.
void measure_indexer(std::ofstream& out, const Device& d, bool quick) {
  if (const CheckResult check = check_indexer(); !check.ok) {
    std::fprintf(stderr, "indexer: %s; not timed\n", check.detail.c_str());
    return;
  }
  const int64_t heads = kV41IndexHeads;
  const int64_t topk = kV41TopK;
  const std::vector<int64_t> position_counts =
      quick ? std::vector<int64_t>{16384} : std::vector<int64_t>{4096, 16384, 65536, 262144, 524288};
  for (const int64_t queries : {1LL, 8LL, 32LL}) {
    for (const int64_t positions : position_counts) {
      const int64_t key_bytes = positions * kIndexKeyBytes;
      const int64_t logit_bytes = queries * positions * static_cast<int64_t>(sizeof(float));
      const int rotation = rotation_for(key_bytes, d);
      std::vector<uint8_t*> keys(static_cast<std::size_t>(rotation));
      for (auto& k : keys) {
        CUDA_CHECK(cudaMalloc(&k, key_bytes));
        CUDA_CHECK(cudaMemset(k, 0x11, key_bytes));
      }
      float *q = nullptr, *w = nullptr, *logits = nullptr;
      int32_t* selected = nullptr;
      CUDA_CHECK(cudaMalloc(&q, queries * heads * kIndexDim * sizeof(float)));
      CUDA_CHECK(cudaMalloc(&w, queries * heads * sizeof(float)));
      CUDA_CHECK(cudaMalloc(&logits, logit_bytes));
      CUDA_CHECK(cudaMalloc(&selected, queries * topk * sizeof(int32_t)));
      CUDA_CHECK(cudaMemset(q, 0, queries * heads * kIndexDim * sizeof(float)));
      CUDA_CHECK(cudaMemset(w, 0, queries * heads * sizeof(float)));
      const TimingStats t = time_kernel(
          [&](int i) {
            launch_indexer_logits(q, w, keys[static_cast<std::size_t>(i % rotation)], logits, queries, heads,
                                  positions);
          },
          kWarmup, kRuns);
      const TimingStats s =
          time_kernel([&](int) { launch_topk(logits, selected, queries, positions, topk); }, kWarmup, kRuns);
      CUDA_CHECK(cudaGetLastError());
      const double flops = 2.0 * static_cast<double>(heads * kIndexDim * queries * positions);
      // k is the per-query work width (heads x dims), as the simulator's indexer kernels carry it.
      char line[256];
      std::snprintf(line, sizeof line,
                    "indexer_logits,indexer,fp32,%lld,%lld,%lld,1,%.0f,%.0f,%.3f,%.3f,%.3f\n",
                    static_cast<long long>(queries), static_cast<long long>(positions),
                    static_cast<long long>(heads * kIndexDim), flops,
                    static_cast<double>(queries * key_bytes + logit_bytes), t.median_us, t.min_us, t.max_us);
      out << line;
      write_row(out, "topk_select", "topk", "fp32", queries, positions,
                33.0 * static_cast<double>(queries * positions), 33.0 * static_cast<double>(logit_bytes), s);
      std::printf("indexer q=%lld positions=%lld: logits %.1f us, top-%lld %.1f us\n",
                  static_cast<long long>(queries), static_cast<long long>(positions), t.median_us,
                  static_cast<long long>(topk), s.median_us);
      for (auto& k : keys) CUDA_CHECK(cudaFree(k));
      CUDA_CHECK(cudaFree(q));
      CUDA_CHECK(cudaFree(w));
      CUDA_CHECK(cudaFree(logits));
      CUDA_CHECK(cudaFree(selected));
    }
  }
}

// Decode batches: each request gathers its top-512 compressed entries and its 128-token window.
void measure_sparse_decode(std::ofstream& out, const Device& dev, double copy_gbps, bool quick) {
  if (const CheckResult check = check_sparse_decode(); !check.ok) {
    std::fprintf(stderr, "sparse decode: %s; not timed\n", check.detail.c_str());
    return;
  }
  const std::vector<int64_t> batches =
      quick ? std::vector<int64_t>{32} : std::vector<int64_t>{1, 8, 32, 64, 128};
  for (const int64_t batch : batches) {
    const SparseDecodeShape shape{batch, kV41QueryHeads, kV41TopK, 262144};
    const SparseDecodeInputs in = make_sparse_decode_inputs(shape, 41);
    const int splits = sparse_decode_splits(shape, dev.sms);
    const DeviceBuffer<float> q(in.q), sink(in.sink), out_buffer(in.q.size());
    const DeviceBuffer<uint8_t> main_kv(in.main_kv), window(in.window);
    const DeviceBuffer<int32_t> topk(in.topk), window_len(in.window_len);
    const DeviceBuffer<float> workspace(
        static_cast<std::size_t>(sparse_decode_workspace_floats(shape, splits)));
    const SparseDecodeDevice d{
        shape,      q.get(),          main_kv.get(),   topk.get(), window.get(), window_len.get(),
        sink.get(), out_buffer.get(), workspace.get(), splits};
    const TimingStats t = time_kernel([&](int) { launch_sparse_decode(d); }, kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double keys = static_cast<double>(shape.topk + kWindowTokens);
    const double flops = 2.0 * static_cast<double>(batch * shape.heads) * keys * 2.0 * kLatentDim;
    const double bytes =
        static_cast<double>(batch) * (shape.topk * kMainEntryBytes + kWindowTokens * kWindowEntryBytes) +
        2.0 * static_cast<double>(in.q.size() * sizeof(float));
    char line[256];
    std::snprintf(line, sizeof line,
                  "sparse_attention_decode,attention,fp32,%lld,%lld,%d,1,%.0f,%.0f,%.3f,%.3f,%.3f\n",
                  static_cast<long long>(batch * shape.heads), static_cast<long long>(keys), 2 * kLatentDim,
                  flops, bytes, t.median_us, t.min_us, t.max_us);
    out << line;
    std::printf("sparse decode batch %lld: %.1f us, %.0f GB/s (%.0f%% of copy)\n",
                static_cast<long long>(batch), t.median_us, bytes / t.median_us / 1e3,
                100.0 * bytes / t.median_us / 1e3 / copy_gbps);
  }
}

// Ratio-2 compressor: pool pairs of tokens and write MXFP4 entries.
void measure_compress(std::ofstream& out, const Device& dev, double copy_gbps, bool quick) {
  if (const CheckResult check = check_compress(); !check.ok) {
    std::fprintf(stderr, "compress: %s; not timed\n", check.detail.c_str());
    return;
  }
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{65536} : std::vector<int64_t>{4096, 65536, 524288};
  for (const int64_t tokens : token_counts) {
    const int64_t in_bytes = 2 * tokens * kDim * static_cast<int64_t>(sizeof(float));
    const int64_t out_bytes = tokens / 2 * mxfp4_entry_bytes(kDim);
    float *kv = nullptr, *score = nullptr, *ape = nullptr;
    uint8_t* entries = nullptr;
    CUDA_CHECK(cudaMalloc(&kv, in_bytes / 2));
    CUDA_CHECK(cudaMalloc(&score, in_bytes / 2));
    CUDA_CHECK(cudaMalloc(&ape, 2 * kDim * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&entries, out_bytes));
    CUDA_CHECK(cudaMemset(kv, 0, in_bytes / 2));
    CUDA_CHECK(cudaMemset(score, 0, in_bytes / 2));
    CUDA_CHECK(cudaMemset(ape, 0, 2 * kDim * sizeof(float)));
    const TimingStats t =
        time_kernel([&](int) { launch_compress_ratio2(kv, score, ape, entries, tokens); }, kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double bytes = static_cast<double>(in_bytes + out_bytes);
    write_row(out, "compress_ratio2", "elementwise", "fp32", tokens / 2, kDim,
              static_cast<double>(tokens * kDim) * 8.0, bytes, t);
    std::printf("compress ratio 2, %lld tokens: %.1f us (%.0f%% of copy)\n", static_cast<long long>(tokens),
                t.median_us, 100.0 * bytes / t.median_us / 1e3 / copy_gbps);
    for (void* p : {static_cast<void*>(kv), static_cast<void*>(score), static_cast<void*>(ape),
                    static_cast<void*>(entries)}) {
      CUDA_CHECK(cudaFree(p));
    }
  }
  (void)dev;
}

// Engram rows gathered from mapped pinned host memory (the host link's rate for 264-byte rows).
void measure_engram(std::ofstream& out, bool quick) {
  if (const CheckResult check = check_engram(); !check.ok) {
    std::fprintf(stderr, "engram gather: %s; not timed\n", check.detail.c_str());
    return;
  }
  const int64_t table_rows = quick ? (1LL << 20) : (8LL << 20);  // 264 MB or 2.1 GB of pinned host memory
  uint8_t* pinned = nullptr;
  CUDA_CHECK(cudaHostAlloc(&pinned, table_rows * kEngramRowBytes, cudaHostAllocMapped));
  std::memset(pinned, 0x5a, table_rows * kEngramRowBytes);
  uint8_t* mapped = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&mapped, pinned, 0));
  for (const int64_t count : {4096LL, 65536LL, 1048576LL}) {
    std::vector<int64_t> rows(static_cast<std::size_t>(count));
    std::mt19937_64 rng(61);
    for (auto& r : rows) r = static_cast<int64_t>(rng() % static_cast<uint64_t>(table_rows));
    int64_t* d_rows = nullptr;
    uint8_t* d_out = nullptr;
    CUDA_CHECK(cudaMalloc(&d_rows, count * sizeof(int64_t)));
    CUDA_CHECK(cudaMalloc(&d_out, count * kEngramRowBytes));
    CUDA_CHECK(cudaMemcpy(d_rows, rows.data(), count * sizeof(int64_t), cudaMemcpyHostToDevice));
    const TimingStats t =
        time_kernel([&](int) { launch_engram_gather(mapped, d_rows, d_out, count); }, 2, 10);
    CUDA_CHECK(cudaGetLastError());
    const double bytes = static_cast<double>(count * kEngramRowBytes);
    write_row(out, "engram_host_gather", "host_copy", "fp32", count, kEngramRowBytes, 0, bytes, t);
    std::printf("engram gather %lld rows: %.1f us, %.1f GB/s over the host link\n",
                static_cast<long long>(count), t.median_us, bytes / t.median_us / 1e3);
    CUDA_CHECK(cudaFree(d_rows));
    CUDA_CHECK(cudaFree(d_out));
  }
  CUDA_CHECK(cudaFreeHost(pinned));
}

// mHC: the three-kernel form against the single pass, same tokens, so the
// traffic halving is measured rather than assumed.
void measure_mhc(std::ofstream& out, double copy_gbps, bool quick) {
  constexpr int64_t kHidden = kV41Hidden;
  if (const CheckResult check = check_mhc(); !check.ok) {
    std::fprintf(stderr, "mhc: %s; not timed\n", check.detail.c_str());
    return;
  }
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{4096} : std::vector<int64_t>{1024, 8192, 32768};
  for (const int64_t tokens : token_counts) {
    const int64_t stream_floats = tokens * kStreams * kHidden;
    const int64_t hidden_floats = tokens * kHidden;
    float *X, *y, *c, *Xo, *x_in, *c_next;
    CUDA_CHECK(cudaMalloc(&X, stream_floats * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&Xo, stream_floats * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y, hidden_floats * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&x_in, hidden_floats * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c, tokens * kCoefficients * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&c_next, tokens * kCoefficients * sizeof(float)));
    CUDA_CHECK(cudaMemset(X, 0, stream_floats * sizeof(float)));
    CUDA_CHECK(cudaMemset(y, 0, hidden_floats * sizeof(float)));
    CUDA_CHECK(cudaMemset(c, 0, tokens * kCoefficients * sizeof(float)));
    const TimingStats three = time_kernel(
        [&](int) {
          launch_mhc_coefficients(X, c_next, tokens, kHidden);
          launch_mhc_pre_mix(X, c_next, x_in, tokens, kHidden);
          launch_mhc_post_merge(X, y, c, Xo, tokens, kHidden);
        },
        kWarmup, kRuns);
    const TimingStats fused = time_kernel(
        [&](int) { launch_mhc_fused(X, y, c, Xo, x_in, c_next, tokens, kHidden); }, kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double h = static_cast<double>(hidden_floats) * sizeof(float);
    const double three_bytes = (4.0 * kStreams + 2.0) * h;  // as the simulator counts the three-kernel form
    const double fused_bytes = (2.0 * kStreams + 2.0) * h;
    write_row(out, "mhc_three_kernel", "elementwise", "fp32", tokens, kStreams * kHidden, 0, three_bytes,
              three);
    write_row(out, "mhc_single_pass", "elementwise", "fp32", tokens, kStreams * kHidden, 0, fused_bytes,
              fused);
    std::printf(
        "mhc %lld tokens: three kernels %.1f us, single pass %.1f us (%.2fx; %.0f%% / %.0f%% of copy)\n",
        static_cast<long long>(tokens), three.median_us, fused.median_us, three.median_us / fused.median_us,
        100.0 * three_bytes / three.median_us / 1e3 / copy_gbps,
        100.0 * fused_bytes / fused.median_us / 1e3 / copy_gbps);
    for (float* p : {X, y, c, Xo, x_in, c_next}) CUDA_CHECK(cudaFree(p));
  }
}

// Expert GEMMs (FP8 x widened FP4 on cuBLASLt) at V4.1's shapes, and a large
// dense FP8 GEMM as the measured matmul ceiling.
void measure_gemm(std::ofstream& out, bool quick) {
  if (const CheckResult check = check_expert_gemm(); !check.ok) {
    std::fprintf(stderr, "expert gemm: %s; not timed\n", check.detail.c_str());
    return;
  }
  struct Shape {
    const char* name;
    const char* cls;
    int64_t m, n, k;
  };
  std::vector<Shape> shapes{{"dense_fp8_gemm", "gemm", 8192, 8192, 8192}};
  const std::vector<int64_t> tokens =
      quick ? std::vector<int64_t>{512} : std::vector<int64_t>{128, 512, 2048, 8192};
  for (const int64_t m : tokens) {
    shapes.push_back({"expert_gate_up", "grouped_gemm", m, 2 * kV41ExpertWidth, kV41Hidden});
    shapes.push_back({"expert_down", "grouped_gemm", m, kV41Hidden, kV41ExpertWidth});
  }
  float* scales = nullptr;
  CUDA_CHECK(cudaMalloc(&scales, 2 * sizeof(float)));
  const float ones[2] = {1.0f, 1.0f};
  CUDA_CHECK(cudaMemcpy(scales, ones, sizeof ones, cudaMemcpyHostToDevice));
  for (const Shape& s : shapes) {
    uint8_t *w8 = nullptr, *a = nullptr;
    float* d = nullptr;
    CUDA_CHECK(cudaMalloc(&w8, s.n * s.k));
    CUDA_CHECK(cudaMalloc(&a, s.m * s.k));
    CUDA_CHECK(cudaMalloc(&d, s.m * s.n * sizeof(float)));
    CUDA_CHECK(cudaMemset(w8, 0x30, s.n * s.k));
    CUDA_CHECK(cudaMemset(a, 0x30, s.m * s.k));
    const Fp8GemmPlan plan(w8, a, d, scales, scales + 1, s.m, s.n, s.k);
    const TimingStats t = time_kernel([&](int) { plan.run(); }, kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    const double bytes = static_cast<double>(s.n * s.k + s.m * s.k) + 4.0 * static_cast<double>(s.m * s.n);
    char line[256];
    std::snprintf(line, sizeof line, "%s,%s,fp8,%lld,%lld,%lld,1,%.0f,%.0f,%.3f,%.3f,%.3f\n", s.name, s.cls,
                  static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                  flops, bytes, t.median_us, t.min_us, t.max_us);
    out << line;
    std::printf("%s %lldx%lldx%lld: %.1f us, %.0f TFLOP/s\n", s.name, static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), t.median_us,
                flops / t.median_us / 1e6);
    CUDA_CHECK(cudaFree(w8));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(d));
  }
  CUDA_CHECK(cudaFree(scales));
}

}  // namespace
}  // namespace v41sim::kernels

int main(int argc, char** argv) {
  std::string out_dir;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: v41sim_measure --out DIR [--quick]\n");
      return 2;
    }
  }
  if (out_dir.empty()) {
    std::fprintf(stderr, "usage: v41sim_measure --out DIR [--quick]\n");
    return 2;
  }
  try {
    std::string why;
    if (!v41sim::kernels::cuda_device_available(&why)) {
      std::fprintf(stderr, "no usable CUDA device: %s\n", why.c_str());
      return 1;
    }
    const auto device = v41sim::kernels::query_device();
    std::filesystem::create_directories(out_dir);
    std::ofstream out(std::filesystem::path(out_dir) / "kernels.csv");
    v41sim::kernels::write_metadata(out, device);
    const double copy_gbps = v41sim::kernels::measure_copy(out, device);
    std::printf("%s: %d SMs, copy %.0f GB/s (read + write)\n", device.props.name, device.sms, copy_gbps);
    v41sim::kernels::measure_mxfp4(out, device, copy_gbps, quick);
    v41sim::kernels::measure_indexer(out, device, quick);
    v41sim::kernels::measure_sparse_decode(out, device, copy_gbps, quick);
    v41sim::kernels::measure_compress(out, device, copy_gbps, quick);
    v41sim::kernels::measure_engram(out, quick);
    v41sim::kernels::measure_mhc(out, copy_gbps, quick);
    v41sim::kernels::measure_gemm(out, quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "v41sim_measure: %s\n", e.what());
    return 1;
  }
  return 0;
}
