#pragma once
// The embedding-similarity contract (docs/models.md; normative Python reference:
// tools/reference/embedding_contract.py). A sentence-embedding model decides zero-shot:
//
//   text(x)      a string as-is, an object or array as Python-compatible compact JSON;
//   candidates   choice: [I + " "] + name [+ ": " + text(description)], I = text(instructions) when
//                not empty; score: "This is " + text(level) + ".";
//                noul: [yes, no] with yes = text(true) | "yes, " + I | "yes",
//                no = text(false) | "no, " + I (when yes came from I) | "not " + yes;
//   sᵢ           cos(embed(text(state)), embed(candidateᵢ)), the dot product of the unit vectors
//                accumulated in float64;
//   pᵢ           softmax(similarity_scale · sᵢ) per question (T = 1/similarity_scale, default 20);
//   answers      the default confidence formulas (linear), first option wins ties;
//   input_tokens state tokens + every candidate's tokens ([CLS]/[SEP] included, after truncation
//                to the model's max_seq_length; a repeated candidate counts each time).
//
// The state is embedded once per request. Candidate embeddings are cached across requests in a
// bounded LRU keyed by the exact text. A batch of requests is one encoder call: their states and
// the candidates that are neither cached nor repeated within the batch.

#include "api/request.h"
#include "backend/cpu/precision.h"
#include "decide/contract_common.h"
#include "decide/contracts/embedding_cache.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s1::decide {

inline constexpr std::string_view embedding_similarity_contract = "embedding-similarity";

// The decision file's settings for this contract (s1serve.json beside the checkpoint).
struct EmbeddingSimilaritySettings {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  double similarity_scale = 20.0;
  // fp32 unless the decision file or the caller says otherwise (docs/models.md: bf16 moves
  // probabilities visibly at scale 20).
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  size_t candidate_cache_entries = 4096;
};

// Reads this contract's members of an s1serve.json whose "contract" member was already read;
// unknown members are load errors (checkpoint::LoadError naming the file and key).
EmbeddingSimilaritySettings read_embedding_similarity_settings(checkpoint::ConfigReader& decision_file);

// The candidate texts of one question, in label order (noul: [yes, no]).
std::vector<std::string> candidate_texts(const api::Question& question);

// Loads the sentence-transformers directory and returns the engine. Throws checkpoint::LoadError or
// text::TokenizerLoadError.
std::unique_ptr<runtime::Engine> make_embedding_similarity_engine(const std::filesystem::path& model_dir,
                                                                   const EmbeddingSimilaritySettings& settings);

// The models directory: $S1SERVE_MODELS, else ~/.local/share/s1serve/models.
std::filesystem::path models_directory();
// Where scripts/fetch-default-model installs the default model (all-MiniLM-L6-v2).
std::filesystem::path default_model_directory();
// "minilm" and "all-minilm-l6-v2" name the default model.
bool is_default_model_name(std::string_view name);

}  // namespace s1::decide
