// AVX-512 chunked gated delta rule for one value head, in fp32. Per chunk of up to chunk_size
// tokens (Transformers' torch_chunk_gated_delta_rule, as matrix products):
//   d = cumsum(g);  A = tril₋₁(diag(β) K Kᵀ ∘ exp(dᵢ − dⱼ));  T = (I + A)⁻¹;
//   U = T (β V) − T (β eᵈ K) S;  out = (eᵈ Q) S + tril(Q Kᵀ ∘ exp(dᵢ − dⱼ)) U;
//   S ← e^{d_last} S + (exp(d_last − d) K)ᵀ U.
// Every product goes through one register-blocked kernel (4 rows × 64 columns), so the chunk costs
// a few dense passes over L1/L2-resident buffers instead of the reference's row-by-row scalar loops.

#include "backend/cpu/x86/gated_delta_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "backend/cpu/x86/avx512_math.h"

namespace s1::backend::cpu::x86 {
namespace {

constexpr std::size_t lanes = 16;
constexpr std::size_t block_rows = 4;
constexpr std::size_t block_vectors = 4;

// C[r][0, 16·vectors) ±= Σ_p A[r][p] · B[p][·] for `rows` rows; the last vector loads/stores only
// the lanes in `tail`.
template <std::size_t rows, std::size_t vectors, bool subtract>
void block_product(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc,
                   std::size_t depth, __mmask16 tail) {
  __mmask16 masks[vectors];
#pragma GCC unroll 4
  for (std::size_t v = 0; v < vectors; ++v) masks[v] = v + 1 == vectors ? tail : static_cast<__mmask16>(0xFFFF);
  __m512 acc[rows][vectors];
#pragma GCC unroll 4
  for (std::size_t r = 0; r < rows; ++r) {
#pragma GCC unroll 4
    for (std::size_t v = 0; v < vectors; ++v) acc[r][v] = _mm512_maskz_loadu_ps(masks[v], c + r * ldc + v * lanes);
  }
  for (std::size_t p = 0; p < depth; ++p) {
    __m512 column[vectors];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < vectors; ++v) column[v] = _mm512_maskz_loadu_ps(masks[v], b + p * ldb + v * lanes);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < rows; ++r) {
      const __m512 scalar = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 4
      for (std::size_t v = 0; v < vectors; ++v) {
        acc[r][v] = subtract ? _mm512_fnmadd_ps(scalar, column[v], acc[r][v])
                             : _mm512_fmadd_ps(scalar, column[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 4
  for (std::size_t r = 0; r < rows; ++r) {
#pragma GCC unroll 4
    for (std::size_t v = 0; v < vectors; ++v) _mm512_mask_storeu_ps(c + r * ldc + v * lanes, masks[v], acc[r][v]);
  }
}

template <std::size_t rows, bool subtract>
void row_block_product(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc,
                       std::size_t columns, std::size_t depth) {
  for (std::size_t col = 0; col < columns; col += block_vectors * lanes) {
    const std::size_t width = std::min(columns - col, block_vectors * lanes);
    const std::size_t vectors = (width + lanes - 1) / lanes;
    const __mmask16 tail = first_lanes(width - (vectors - 1) * lanes);
    switch (vectors) {
      case 1:
        block_product<rows, 1, subtract>(a, lda, b + col, ldb, c + col, ldc, depth, tail);
        break;
      case 2:
        block_product<rows, 2, subtract>(a, lda, b + col, ldb, c + col, ldc, depth, tail);
        break;
      case 3:
        block_product<rows, 3, subtract>(a, lda, b + col, ldb, c + col, ldc, depth, tail);
        break;
      default:
        block_product<rows, 4, subtract>(a, lda, b + col, ldb, c + col, ldc, depth, tail);
        break;
    }
  }
}

// C[m, n] ±= A[m, depth(i)] · B[depth(i), n], where row i of A reads only its first depth(i)
// entries: `depth` for a full A, i + 1 + depth_offset (capped at `depth`) for a lower-triangular one
// whose later entries are zero.
struct Product {
  const float* a;
  std::size_t lda;
  const float* b;
  std::size_t ldb;
  float* c;
  std::size_t ldc;
  std::size_t m, n, depth;
  bool lower_triangular = false;
};

template <bool subtract>
void multiply(const Product& p) {
  for (std::size_t i = 0; i < p.m; i += block_rows) {
    const std::size_t rows = std::min(block_rows, p.m - i);
    const std::size_t depth = p.lower_triangular ? std::min(p.depth, i + rows) : p.depth;
    const float* a = p.a + i * p.lda;
    float* c = p.c + i * p.ldc;
    switch (rows) {
      case 1:
        row_block_product<1, subtract>(a, p.lda, p.b, p.ldb, c, p.ldc, p.n, depth);
        break;
      case 2:
        row_block_product<2, subtract>(a, p.lda, p.b, p.ldb, c, p.ldc, p.n, depth);
        break;
      case 3:
        row_block_product<3, subtract>(a, p.lda, p.b, p.ldb, c, p.ldc, p.n, depth);
        break;
      default:
        row_block_product<4, subtract>(a, p.lda, p.b, p.ldb, c, p.ldc, p.n, depth);
        break;
    }
  }
}

// Strong decays (the exp of a long cumulative log-decay) push state and weight entries below
// FLT_MIN, and subnormal arithmetic costs ~100 cycles an operation on x86: on a random-weight
// checkpoint it made the kernel ten times slower. Within the kernel such values are flushed to zero
// (a change below 1.2e-38 absolute); the caller's MXCSR comes back on exit.
class FlushSubnormals {
 public:
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | flush_to_zero | denormals_are_zero); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  static constexpr unsigned flush_to_zero = 0x8000;
  static constexpr unsigned denormals_are_zero = 0x0040;
  unsigned saved_;
};

// y[0, n) = x[0, n) · factor.
void scale_row(const float* x, float factor, std::size_t n, float* y) {
  const __m512 f = _mm512_set1_ps(factor);
  for (std::size_t c = 0; c < n; c += lanes) {
    const __mmask16 m = first_lanes(n - c);
    _mm512_mask_storeu_ps(y + c, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + c), f));
  }
}

struct DeltaScratch {
  std::vector<float> decay, keys_t, gram, scores, triangle, scaled_values, scaled_keys, new_values, keys_w,
      weighted_keys_t;
};

}  // namespace

void gated_delta_rule_head_avx512(const GatedDeltaInputs& inputs, GatedDeltaShape shape, std::size_t head,
                                  std::size_t first_position, std::size_t chunk_size, std::span<float> head_state,
                                  std::span<float> out) {
  const std::size_t dk = shape.k_dim;
  const std::size_t dv = shape.v_dim;
  const std::size_t key_head = head / (shape.v_heads / shape.k_heads);
  const std::size_t qk_stride = shape.k_heads * dk;
  const std::size_t out_stride = shape.v_heads * dv;
  assert(chunk_size > 0 && head_state.size() == dk * dv);
  const std::size_t capacity = std::min(chunk_size, inputs.rows);
  // Row stride of the chunk-square matrices and of transposed keys: whole vectors.
  const std::size_t square = (capacity + lanes - 1) / lanes * lanes;

  // Per-thread buffers kept between calls (a forward makes one call per value head, layer and
  // branch). Every chunk writes what it reads, so what a previous call left in them never shows.
  thread_local DeltaScratch scratch;
  const auto sized = [](std::vector<float>& buffer, std::size_t size) -> std::vector<float>& {
    buffer.resize(size);
    return buffer;
  };
  std::vector<float>& decay = sized(scratch.decay, capacity);
  std::vector<float>& keys_t = sized(scratch.keys_t, dk * square);                 // Kᵀ: [dk, L]
  std::vector<float>& gram = sized(scratch.gram, capacity * square);               // K Kᵀ, then A
  std::vector<float>& scores = sized(scratch.scores, capacity * square);           // Q Kᵀ, then the decay-masked P
  std::vector<float>& triangle = sized(scratch.triangle, capacity * square);       // T = (I + A)⁻¹
  std::vector<float>& scaled_values = sized(scratch.scaled_values, capacity * dv);  // β V
  std::vector<float>& scaled_keys = sized(scratch.scaled_keys, capacity * dk);      // β eᵈ K, then eᵈ Q
  std::vector<float>& new_values = sized(scratch.new_values, capacity * dv);        // U
  std::vector<float>& keys_w = sized(scratch.keys_w, capacity * dk);                // W = T (β eᵈ K)
  std::vector<float>& weighted_keys_t = sized(scratch.weighted_keys_t, dk * square);  // (exp(d_last − d) K)ᵀ
  float* state = head_state.data();
  const FlushSubnormals flush;

  for (std::size_t start = 0; start < inputs.rows;) {
    const std::size_t position = first_position + start;
    const std::size_t length = std::min(chunk_size - position % chunk_size, inputs.rows - start);
    const auto q = [&](std::size_t i) { return inputs.query.data() + (start + i) * qk_stride + key_head * dk; };
    const auto k = [&](std::size_t i) { return inputs.key.data() + (start + i) * qk_stride + key_head * dk; };
    const auto v = [&](std::size_t i) { return inputs.value.data() + (start + i) * inputs.value_stride + head * dv; };
    const auto beta = [&](std::size_t i) { return inputs.beta[(start + i) * shape.v_heads + head]; };
    float running = 0.0F;
    for (std::size_t i = 0; i < length; ++i) {
      running += inputs.g[(start + i) * shape.v_heads + head];
      decay[i] = running;
    }

    for (std::size_t a = 0; a < dk; ++a) {
      float* row = keys_t.data() + a * square;
      for (std::size_t j = 0; j < length; ++j) row[j] = k(j)[a];
    }
    // K Kᵀ and Q Kᵀ, lower triangles (with diagonal) only.
    std::fill(gram.begin(), gram.end(), 0.0F);
    std::fill(scores.begin(), scores.end(), 0.0F);
    for (std::size_t i = 0; i < length; i += block_rows) {
      const std::size_t rows = std::min(block_rows, length - i);
      multiply<false>(Product{k(i), qk_stride, keys_t.data(), square, gram.data() + i * square, square, rows, i + rows,
                              dk});
      multiply<false>(Product{q(i), qk_stride, keys_t.data(), square, scores.data() + i * square, square, rows,
                              i + rows, dk});
    }
    // Decay weights exp(dᵢ − dⱼ) for j ≤ i; A keeps j < i scaled by βᵢ, P keeps j ≤ i.
    for (std::size_t i = 0; i < length; ++i) {
      const __m512 di = _mm512_set1_ps(decay[i]);
      const __m512 bi = _mm512_set1_ps(beta(i));
      float* a_row = gram.data() + i * square;
      float* p_row = scores.data() + i * square;
      for (std::size_t j = 0; j <= i; j += lanes) {
        const __mmask16 below = first_lanes(i - j);     // j' < i
        const __mmask16 upto = first_lanes(i + 1 - j);  // j' ≤ i
        const __m512 weight = exp_vector(_mm512_sub_ps(di, _mm512_maskz_loadu_ps(upto, decay.data() + j)));
        _mm512_storeu_ps(a_row + j,
                         _mm512_maskz_mul_ps(below, _mm512_mul_ps(_mm512_loadu_ps(a_row + j), weight), bi));
        _mm512_storeu_ps(p_row + j, _mm512_maskz_mul_ps(upto, _mm512_loadu_ps(p_row + j), weight));
      }
    }
    // T = (I + A)⁻¹ row by row: Tᵢ = eᵢ − Σ_{j<i} A_ij T_j (T is unit lower triangular).
    std::fill(triangle.begin(), triangle.end(), 0.0F);
    for (std::size_t i = 0; i < length; ++i) {
      float* t_row = triangle.data() + i * square;
      t_row[i] = 1.0F;
      multiply<true>(Product{gram.data() + i * square, square, triangle.data(), square, t_row, square, 1, i, i});
    }

    for (std::size_t i = 0; i < length; ++i) {
      scale_row(v(i), beta(i), dv, scaled_values.data() + i * dv);
      scale_row(k(i), beta(i) * std::exp(decay[i]), dk, scaled_keys.data() + i * dk);
    }
    std::fill_n(new_values.begin(), length * dv, 0.0F);
    std::fill_n(keys_w.begin(), length * dk, 0.0F);
    multiply<false>(Product{triangle.data(), square, scaled_values.data(), dv, new_values.data(), dv, length, dv,
                            length, true});
    multiply<false>(
        Product{triangle.data(), square, scaled_keys.data(), dk, keys_w.data(), dk, length, dk, length, true});
    // The part of each value the carried state already predicts is not written again (delta rule).
    multiply<true>(Product{keys_w.data(), dk, state, dv, new_values.data(), dv, length, dv, dk});

    for (std::size_t i = 0; i < length; ++i) {
      scale_row(q(i), std::exp(decay[i]), dk, scaled_keys.data() + i * dk);
      std::fill_n(out.data() + (start + i) * out_stride + head * dv, dv, 0.0F);
    }
    float* out_rows = out.data() + start * out_stride + head * dv;
    multiply<false>(Product{scaled_keys.data(), dk, state, dv, out_rows, out_stride, length, dv, dk});
    multiply<false>(
        Product{scores.data(), square, new_values.data(), dv, out_rows, out_stride, length, dv, length, true});

    const float last = decay[length - 1];
    for (std::size_t j = 0; j < length; ++j) {
      const float key_gain = std::exp(last - decay[j]);
      for (std::size_t a = 0; a < dk; ++a) weighted_keys_t[a * square + j] = key_gain * k(j)[a];
    }
    for (std::size_t a = 0; a < dk; ++a) scale_row(state + a * dv, std::exp(last), dv, state + a * dv);
    multiply<false>(Product{weighted_keys_t.data(), square, new_values.data(), dv, state, dv, dk, dv, length});
    start += length;
  }
}

void causal_conv1d_silu_avx512(std::span<const float> x, std::size_t rows, std::size_t x_stride,
                               std::span<const float> weight, std::size_t kernel, std::span<float> tail,
                               std::span<float> y, std::size_t channel_begin, std::size_t channel_end) {
  const std::size_t channels = weight.size() / kernel;
  const std::size_t history = kernel - 1;
  assert(kernel >= 1 && tail.size() == history * channels && y.size() >= rows * channels);
  assert(rows == 0 || x.size() >= (rows - 1) * x_stride + channels);
  // Row s of the padded sequence for channels [c, c + 16): s < 0 reads the carried tail.
  const auto input = [&](std::ptrdiff_t s, std::size_t c, __mmask16 m) {
    if (s < 0) {
      return _mm512_maskz_loadu_ps(
          m, tail.data() + static_cast<std::size_t>(static_cast<std::ptrdiff_t>(history) + s) * channels + c);
    }
    return _mm512_maskz_loadu_ps(m, x.data() + static_cast<std::size_t>(s) * x_stride + c);
  };
  // Rows outer, channels inner: a channel-outer walk would touch one page per fused input row
  // (tens of KB apart) for every 16 channels, and TLB misses dominated.
  const std::size_t width = channel_end - channel_begin;
  thread_local std::vector<float> taps;  // taps[j·width + c − channel_begin] = weight[c, j]
  taps.resize(kernel * width);
  for (std::size_t c = 0; c < width; ++c)
    for (std::size_t j = 0; j < kernel; ++j) taps[j * width + c] = weight[(channel_begin + c) * kernel + j];
  for (std::size_t t = 0; t < rows; ++t) {
    for (std::size_t c = channel_begin; c < channel_end; c += lanes) {
      const __mmask16 m = first_lanes(channel_end - c);
      __m512 sum = _mm512_setzero_ps();
      for (std::size_t j = 0; j < kernel; ++j) {
        const std::ptrdiff_t s = static_cast<std::ptrdiff_t>(t + j) - static_cast<std::ptrdiff_t>(history);
        sum = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, taps.data() + j * width + (c - channel_begin)), input(s, c, m),
                              sum);
      }
      const __m512 silu = _mm512_div_ps(
          sum, _mm512_add_ps(_mm512_set1_ps(1.0F), exp_vector(_mm512_sub_ps(_mm512_setzero_ps(), sum))));
      _mm512_mask_storeu_ps(y.data() + t * channels + c, m, silu);
    }
  }
  for (std::size_t c = channel_begin; c < channel_end; c += lanes) {
    const __mmask16 m = first_lanes(channel_end - c);
    // New tail row i = padded row rows − history + i; reading tail rows above i, so ascending i never
    // overwrites a row still to be read.
    for (std::size_t i = 0; i < history; ++i) {
      const __m512 row = input(static_cast<std::ptrdiff_t>(rows + i) - static_cast<std::ptrdiff_t>(history), c, m);
      _mm512_mask_storeu_ps(tail.data() + i * channels + c, m, row);
    }
  }
}

namespace {

// Σ x² of one row in sixteen fp32 lanes.
float sum_of_squares(const float* row, std::size_t width) {
  __m512 squares = _mm512_setzero_ps();
  for (std::size_t i = 0; i < width; i += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(first_lanes(width - i), row + i);
    squares = _mm512_fmadd_ps(v, v, squares);
  }
  return sum_vector(squares);
}

}  // namespace

void l2_norm_scaled_avx512(std::span<const float> x, std::size_t dim, float eps, float scale, std::span<float> y) {
  assert(dim > 0 && x.size() % dim == 0 && y.size() == x.size());
  const __m512 factor = _mm512_set1_ps(scale);
  for (std::size_t row = 0; row < x.size() / dim; ++row) {
    const float* in = x.data() + row * dim;
    float* out = y.data() + row * dim;
    const __m512 inverse = _mm512_set1_ps(1.0F / std::sqrt(sum_of_squares(in, dim) + eps));
    // (x · 1/‖x‖) · scale, rounded in the reference's order.
    for (std::size_t i = 0; i < dim; i += 16) {
      const __mmask16 live = first_lanes(dim - i);
      _mm512_mask_storeu_ps(out + i, live, _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(live, in + i), inverse), factor));
    }
  }
}

void gated_rms_norm_avx512(std::span<const float> x, std::span<const float> gate, std::span<const float> weight,
                           float eps, std::span<float> y) {
  const std::size_t width = weight.size();
  assert(width > 0 && x.size() % width == 0 && gate.size() == x.size() && y.size() == x.size());
  const __m512 one = _mm512_set1_ps(1.0F);
  for (std::size_t row = 0; row < x.size() / width; ++row) {
    const float* in = x.data() + row * width;
    const float* z = gate.data() + row * width;
    float* out = y.data() + row * width;
    const float mean = sum_of_squares(in, width) / static_cast<float>(width);
    const __m512 inverse = _mm512_set1_ps(1.0F / std::sqrt(mean + eps));
    // (weight · (x · 1/rms)) · SiLU(z), rounded in the reference's order.
    for (std::size_t i = 0; i < width; i += 16) {
      const __mmask16 live = first_lanes(width - i);
      const __m512 g = _mm512_maskz_loadu_ps(live, z + i);
      const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, exp_vector(_mm512_sub_ps(_mm512_setzero_ps(), g))));
      const __m512 normed = _mm512_mul_ps(_mm512_maskz_loadu_ps(live, weight.data() + i),
                                          _mm512_mul_ps(_mm512_maskz_loadu_ps(live, in + i), inverse));
      _mm512_mask_storeu_ps(out + i, live, _mm512_mul_ps(normed, silu));
    }
  }
}

}  // namespace s1::backend::cpu::x86
