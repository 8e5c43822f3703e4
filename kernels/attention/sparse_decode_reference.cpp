#include "kernels/attention/sparse_decode_reference.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "kernels/common/fp_codec.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"

namespace v41sim::kernels {

SparseDecodeInputs make_sparse_decode_inputs(const SparseDecodeShape& s, uint32_t seed) {
  if (s.batch <= 0 || s.heads <= 0 || s.topk <= 0 || s.main_entries <= 0)
    throw std::invalid_argument("sparse decode: bad shape");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  SparseDecodeInputs in;
  in.shape = s;
  in.q.resize(static_cast<std::size_t>(s.batch * s.heads * kLatentDim));
  for (uint16_t& v : in.q) v = bf16_bits(normal(rng) * 0.1f);
  std::vector<float> latent(static_cast<std::size_t>(s.main_entries * kLatentDim));
  for (float& v : latent) v = normal(rng);
  in.main_kv = quantize_mxfp4_kv_reference(latent, s.main_entries, kLatentDim);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(s.main_entries - 1));
  in.topk.resize(static_cast<std::size_t>(s.batch * s.topk));
  for (std::size_t i = 0; i < in.topk.size(); ++i)
    in.topk[i] = (i % 17 == 16) ? -1 : pick(rng);  // some padding
  in.window.resize(static_cast<std::size_t>(s.batch * kWindowTokens * kWindowEntryBytes));
  std::vector<float> token(kLatentDim);
  for (int64_t e = 0; e < s.batch * kWindowTokens; ++e) {
    for (float& v : token) v = normal(rng);
    quantize_window_entry(token.data(), in.window.data() + e * kWindowEntryBytes);
  }
  in.window_len.resize(static_cast<std::size_t>(s.batch));
  for (int64_t b = 0; b < s.batch; ++b)
    in.window_len[static_cast<std::size_t>(b)] = static_cast<int32_t>(b % 2 ? kWindowTokens : 37 + b);
  in.sink.resize(static_cast<std::size_t>(s.heads));
  for (float& v : in.sink) v = normal(rng);
  return in;
}

std::vector<float> sparse_decode_reference(const SparseDecodeInputs& in) {
  const SparseDecodeShape& s = in.shape;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kLatentDim));
  std::vector<float> out(static_cast<std::size_t>(s.batch * s.heads * kLatentDim), 0.0f);
  std::vector<const uint8_t*> keys;
  std::vector<bool> is_main;
  std::vector<double> q(kLatentDim);
  for (int64_t b = 0; b < s.batch; ++b) {
    keys.clear();
    is_main.clear();
    for (int64_t j = 0; j < s.topk; ++j) {
      const int32_t index = in.topk[static_cast<std::size_t>(b * s.topk + j)];
      if (index < 0) continue;
      keys.push_back(in.main_kv.data() + static_cast<int64_t>(index) * kMainEntryBytes);
      is_main.push_back(true);
    }
    for (int32_t w = 0; w < in.window_len[static_cast<std::size_t>(b)]; ++w) {
      keys.push_back(in.window.data() + (b * kWindowTokens + w) * kWindowEntryBytes);
      is_main.push_back(false);
    }
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int i = 0; i < kLatentDim; ++i)
        q[static_cast<std::size_t>(i)] =
            bf16_value(in.q[static_cast<std::size_t>((b * s.heads + h) * kLatentDim + i)]);
      std::vector<double> scores(keys.size());
      double max_score = in.sink[static_cast<std::size_t>(h)];
      for (std::size_t j = 0; j < keys.size(); ++j) {
        double dot = 0;
        for (int i = 0; i < kLatentDim; ++i) {
          dot += q[static_cast<std::size_t>(i)] *
                 (is_main[j] ? main_entry_value(keys[j], i) : window_entry_value(keys[j], i));
        }
        scores[j] = dot * scale;
        max_score = std::max(max_score, scores[j]);
      }
      double denominator = std::exp(in.sink[static_cast<std::size_t>(h)] - max_score);
      for (double& sc : scores) denominator += (sc = std::exp(sc - max_score));
      float* o = out.data() + (b * s.heads + h) * kLatentDim;
      for (int i = 0; i < kLatentDim; ++i) {
        double acc = 0;
        for (std::size_t j = 0; j < keys.size(); ++j) {
          acc += scores[j] * (is_main[j] ? main_entry_value(keys[j], i) : window_entry_value(keys[j], i));
        }
        o[i] = static_cast<float>(acc / denominator);
      }
    }
  }
  return out;
}

}  // namespace v41sim::kernels
