#pragma once
// The one table from a checkpoint's config.json model_type to the decoder family that runs it.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/precision.h"
#include "model/decoder/causal_decoder.h"
#include "model/decoder/lora_adapter.h"

namespace s1::decoder {

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
std::unique_ptr<CausalDecoder> load_gguf_causal_decoder(const std::filesystem::path& file,
                                                        std::string_view architecture,
                                                        backend::cpu::Precision precision);

// Loads the checkpoint in `dir` with its family. Throws checkpoint::LoadError naming the file and the
// problem (including a model_type that no family runs).
std::unique_ptr<CausalDecoder> load_causal_decoder(const std::filesystem::path& dir, backend::cpu::Precision precision);

// As load_causal_decoder, with a LoRA adapter applied unmerged at run time. Only the qwen3_5 family
// takes one; any other is a LoadError.
std::unique_ptr<CausalDecoder> load_causal_decoder_with_adapter(const std::filesystem::path& dir,
                                                                backend::cpu::Precision precision,
                                                                const LoraAdapter& adapter);

}  // namespace s1::decoder
