#pragma once
// The one table from a checkpoint's config.json model_type to the decoder family that runs it.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/precision.h"
#include "model/decoder/causal_decoder.h"

namespace s1::decoder {

// The model_type of dir/config.json when it names a causal decoder family this build runs
// ("qwen3", "qwen3_5", …); nullopt when there is no config.json or it names something else.
std::optional<std::string> decoder_family_of(const std::filesystem::path& dir);

// Loads the checkpoint in `dir` with its family. Throws checkpoint::LoadError naming the file and the
// problem (including a model_type that no family runs).
std::unique_ptr<CausalDecoder> load_causal_decoder(const std::filesystem::path& dir, kernels::Precision precision);

}  // namespace s1::decoder
