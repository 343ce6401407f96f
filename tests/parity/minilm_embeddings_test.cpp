// Embedding parity of the native BERT pipeline against sentence-transformers (fp32 torch) on the
// committed fixtures: token ids exact, cosine ≥ 0.99999 in fp32 and ≥ 0.999 in bf16, in batches of
// mixed lengths (packed) and one text at a time. Gates declared before comparing
// (tests/parity/minilm/README.md).

#include "minilm_fixtures.h"

#include "backend/cpu/linear.h"
#include "model/bert/sentence_encoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace s1::parity {
namespace {

constexpr size_t dim = 384;

struct Fixture {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_ids;
  std::vector<bool> truncated;
  std::vector<float> embeddings;  // [count, dim]
};

const Fixture& fixture() {
  static const Fixture loaded = [] {
    Fixture f;
    for (const OrderedJson& line : read_jsonl(fixture_dir() / "embeddings.jsonl")) {
      EXPECT_EQ(line.at("index").get<size_t>(), f.texts.size());
      f.texts.push_back(line.at("text").get<std::string>());
      f.token_ids.push_back(line.at("token_ids").get<std::vector<int32_t>>());
      f.truncated.push_back(line.at("truncated").get<bool>());
    }
    f.embeddings = read_f32(fixture_dir() / "embeddings.f32");
    EXPECT_EQ(f.embeddings.size(), f.texts.size() * dim);
    return f;
  }();
  return loaded;
}

double cosine(const float* a, const float* b) {
  double dot = 0.0, na = 0.0, nb = 0.0;
  for (size_t c = 0; c < dim; ++c) {
    dot += static_cast<double>(a[c]) * b[c];
    na += static_cast<double>(a[c]) * a[c];
    nb += static_cast<double>(b[c]) * b[c];
  }
  return dot / std::sqrt(na * nb);
}

struct Comparison {
  double min_cosine = 1.0;
  double max_abs = 0.0;
  size_t worst = 0;
};

Comparison compare(const std::vector<float>& got, const std::vector<size_t>& rows) {
  Comparison result;
  for (size_t i = 0; i < rows.size(); ++i) {
    const float* ours = got.data() + i * dim;
    const float* reference = fixture().embeddings.data() + rows[i] * dim;
    const double c = cosine(ours, reference);
    if (c < result.min_cosine) {
      result.min_cosine = c;
      result.worst = rows[i];
    }
    for (size_t d = 0; d < dim; ++d) {
      result.max_abs = std::max(result.max_abs, static_cast<double>(std::abs(ours[d] - reference[d])));
    }
  }
  return result;
}

// Batches of consecutive fixture rows (mixed lengths: the fixture interleaves short, long and
// truncated texts), `batch` rows each.
std::vector<float> embed_in_batches(bert::SentenceEncoder& encoder, size_t batch) {
  std::vector<float> out;
  const auto& ids = fixture().token_ids;
  for (size_t first = 0; first < ids.size(); first += batch) {
    const size_t last = std::min(ids.size(), first + batch);
    const auto part = encoder.embed(std::span<const std::vector<int32_t>>(ids).subspan(first, last - first));
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::vector<size_t> all_rows() {
  std::vector<size_t> rows(fixture().texts.size());
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

class MiniLmEmbeddings : public ::testing::Test {
 protected:
  static bert::SentenceEncoder& encoder(backend::cpu::Precision precision) {
    static std::optional<bert::SentenceEncoder> fp32, bf16;
    auto& slot = precision == backend::cpu::Precision::fp32 ? fp32 : bf16;
    if (!slot) slot.emplace(bert::SentenceEncoder::open(model_dir_or_fail(), precision));
    return *slot;
  }
};

TEST_F(MiniLmEmbeddings, PipelineIsReadFromTheModelDirectory) {
  auto& model = encoder(backend::cpu::Precision::fp32);
  EXPECT_EQ(model.max_seq_length(), 256);
  EXPECT_TRUE(model.normalizes());
  EXPECT_EQ(model.dimension(), dim);
  EXPECT_EQ(model.config().num_hidden_layers, 6);
}

TEST_F(MiniLmEmbeddings, TokenIdsMatchIncludingTruncation) {
  auto& model = encoder(backend::cpu::Precision::fp32);
  size_t truncated = 0;
  for (size_t i = 0; i < fixture().texts.size(); ++i) {
    const text::Encoding encoding = model.tokenize(fixture().texts[i]);
    EXPECT_EQ(encoding.ids, fixture().token_ids[i]) << "text " << i;
    EXPECT_EQ(encoding.truncated, fixture().truncated[i]) << "text " << i;
    truncated += fixture().truncated[i] ? 1 : 0;
  }
  EXPECT_GE(truncated, 5U) << "the fixture must exercise >256-token truncation";
  EXPECT_GE(fixture().texts.size(), 300U);
}

TEST_F(MiniLmEmbeddings, Fp32MatchesSentenceTransformersInMixedBatches) {
  // Consecutive fixture rows mix short, long and truncated texts in one packed batch.
  const Comparison result = compare(embed_in_batches(encoder(backend::cpu::Precision::fp32), 32), all_rows());
  EXPECT_GE(result.min_cosine, 0.99999) << "worst text " << result.worst;
  EXPECT_LE(result.max_abs, 1e-5);
  std::printf("fp32 batches of 32: min cosine %.9f, max |diff| %.3g\n", result.min_cosine, result.max_abs);
}

TEST_F(MiniLmEmbeddings, Fp32OneTextAtATimeAgreesWithBatches) {
  // Every truncated text and every 8th other one, alone, against the same rows inside a batch of 32.
  auto& model = encoder(backend::cpu::Precision::fp32);
  std::vector<size_t> rows;
  std::vector<std::vector<int32_t>> alone_ids;
  for (size_t i = 0; i < fixture().texts.size(); ++i) {
    if (fixture().truncated[i] || i % 8 == 0) {
      rows.push_back(i);
      alone_ids.push_back(fixture().token_ids[i]);
    }
  }
  std::vector<float> alone;
  for (const auto& ids : alone_ids) {
    const auto row = model.embed(std::span<const std::vector<int32_t>>(&ids, 1));
    alone.insert(alone.end(), row.begin(), row.end());
  }
  const Comparison result = compare(alone, rows);
  EXPECT_GE(result.min_cosine, 0.99999) << "worst text " << result.worst;
  EXPECT_LE(result.max_abs, 1e-5);
  std::printf("fp32 alone (%zu texts): min cosine %.9f, max |diff| %.3g\n", rows.size(), result.min_cosine,
              result.max_abs);
}

TEST_F(MiniLmEmbeddings, Bf16MatchesWithinItsGate) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16)) GTEST_SKIP() << "no AVX-512 on this CPU";
  auto& model = encoder(backend::cpu::Precision::bf16);
  const Comparison result = compare(embed_in_batches(model, 32), all_rows());
  EXPECT_GE(result.min_cosine, 0.999) << "worst text " << result.worst;
  std::printf("bf16 batches of 32: min cosine %.6f, max |diff| %.3g\n", result.min_cosine, result.max_abs);
}

}  // namespace
}  // namespace s1::parity
