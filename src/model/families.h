#pragma once
// The one family table: from a checkpoint's config.json model_type (or a GGUF file's architecture)
// to the decoder or encoder family that runs it. Contracts and pipelines get every model through
// here and link no family library themselves.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/precision.h"
#include "model/checkpoint/config_reader.h"
#include "model/decoder/causal_decoder.h"
#include "model/decoder/lora_adapter.h"
#include "model/encoder/encoder.h"

namespace s1::model {

// --- causal decoders ----------------------------------------------------------------------------

// Ways to load a decoder other than as its checkpoint's plain causal LM. A family that does not
// offer one that is asked for is a checkpoint::LoadError.
struct DecoderOptions {
  // Full-attention layers attend bidirectionally within each sequence (the code-readout models);
  // no prefix state can then be shared. qwen3_5 only.
  bool noncausal_full_attention = false;
  // Load no LM head (a backbone read through a separate readout). qwen3_5 only.
  bool without_lm_head = false;
  // A LoRA adapter applied unmerged at run time. qwen3_5 only.
  const decoder::LoraAdapter* adapter = nullptr;
};

// The model_type of dir/config.json when it names a causal decoder family this build runs
// ("qwen3", "qwen3_5", …); nullopt when there is no config.json or it names something else.
std::optional<std::string> decoder_family_of(const std::filesystem::path& dir);

// The family that runs a GGUF file whose general.architecture is `architecture` ("qwen3", "qwen35",
// "lfm2"); nullopt for any other.
std::optional<std::string> decoder_family_of_gguf(std::string_view architecture);
// The architectures decoder_family_of_gguf knows, comma-separated, for messages.
std::string known_gguf_architectures();
// Loads a GGUF file with the family of its general.architecture (`architecture`, already read by the
// caller). Throws checkpoint::LoadError naming the file and the problem.
std::unique_ptr<decoder::CausalDecoder> load_gguf_causal_decoder(const std::filesystem::path& file,
                                                                 std::string_view architecture,
                                                                 backend::cpu::Precision precision);

// Loads the checkpoint in `dir` with its family. Throws checkpoint::LoadError naming the file and the
// problem (including a model_type that no family runs, or options its family does not offer).
std::unique_ptr<decoder::CausalDecoder> load_causal_decoder(const std::filesystem::path& dir,
                                                            backend::cpu::Precision precision,
                                                            const DecoderOptions& options = {});

// --- encoders -----------------------------------------------------------------------------------

// The encoder family of dir/config.json ("bert", "modernbert"); nullopt as decoder_family_of.
std::optional<std::string> encoder_family_of(const std::filesystem::path& dir);

// Reads an encoder config of the family `model_type` from `config` (a config.json, or an object
// inside a larger model's config), strictly: an unknown or unsupported setting is a LoadError naming
// the file and key, as is a model_type no encoder family runs.
std::unique_ptr<encoder::EncoderSpec> read_encoder_config(std::string_view model_type,
                                                          checkpoint::ConfigReader& config);

// Loads the encoder checkpoint in `dir` (config.json and its weights) with its family. Throws
// checkpoint::LoadError naming the file and the problem.
std::unique_ptr<encoder::Encoder> load_encoder(const std::filesystem::path& dir, backend::cpu::Precision precision);

// The backend arithmetic of a contract's precision setting, for an EncoderSpec or a head.
backend::Arithmetic arithmetic_of(backend::cpu::Precision precision);

}  // namespace s1::model
