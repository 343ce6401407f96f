#pragma once
// The Vela 2.0 0.8B contract, choice/noul/score (models.md §4.13; vllm-sr/Vela-2.0-0.8B, a Qwen3.5
// hybrid with the Decision 2.0 candidate head; docs/models/vela-2.0-0.8b.md lists what is verified
// and what is assumed). The layout is the one vllm-sr's runtime documents for the release's engine
// (families/vela2/decoder_layout.py), every piece tokenised on its own without special tokens:
//
//   parts    "Context:\n", then per part '<segment role="R">\n' TEXT '\n</segment>\n' (state → parts
//            as the 0.3B contract maps them: request/source/answer → user/context/answer, else one
//            user part); run ONCE as the tree's prefix.
//   block    per question, continuing from the parts alone (a prefix fork):
//            "\n\nTask type: T\nTarget: R1, R2\nQuestion:\nQ\nOptions:" (noul reads as a choice),
//            per option of vela_named_options "\n<option>\n" + {"description":…,"key":…} (sorted
//            keys, compact) + "\n</option>", the abstain option ("[ABS]", "None of the shown options
//            applies.") for choice and noul, and
//            "\n\nSelect the single option best supported by the context and instructions.\nDecision:".
//   readout  heads::CandidateHead at each option's last token against the block's last token; the
//            [ABS] logit stays out of the distribution; answers as the 0.3B contract gives them
//            (calibration.json temperatures, top-2 margin, 1 − normalised variance, noul p(yes)).
//   limits   max_length (s1serve.json, default 16,384, ≤ the decoder's positions) over the parts
//            plus every block; the parts are cut in order by what is over (each keeps ≥ 1 token);
//            questions alone over it: 400 max_tokens_exceeded.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/request.h"
#include "decide/contract_common.h"
#include "model/checkpoint/config_reader.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace s1::decide {

inline constexpr std::string_view vela_decoder_contract = "vela-0.8b";
inline constexpr std::string_view vela_decoder_heads_file = "vela_heads.safetensors";

struct VelaDecoderSettings {
  std::string name = "vela-2.0-0.8b";
  std::vector<std::string> aliases;
  std::string description = "Vela 2.0 0.8B: Qwen3.5 hybrid, one tree per request, candidate head (vllm-sr)";
  backend::cpu::Precision precision = backend::cpu::Precision::fp32;
  std::size_t max_length = 16384;
};

// This contract's members of an s1serve.json whose "contract" member was already read: name,
// aliases, description, precision, max_length. Any other member is a load error.
VelaDecoderSettings read_vela_decoder_settings(checkpoint::ConfigReader& decision_file);

// One question block as token ids after the parts.
struct VelaBlock {
  std::vector<int32_t> tokens;
  std::vector<std::size_t> endpoints;  // each real option's last token, then [ABS]'s when it has one
  std::size_t real_options = 0;
};

// The texts a block is rendered from, in token order (the head, one per option, the suffix).
std::vector<std::string> vela_block_pieces(const api::Question& question, const std::vector<std::string>& roles);

// The whole tree of a request: the parts (cut to fit `max_length`) and every block.
struct VelaTree {
  std::vector<int32_t> prefix;
  std::vector<VelaBlock> blocks;
  std::size_t state_tokens = 0;  // the parts' own tokens before any cut
};

api::Result<VelaTree> vela_render_tree(const text::Tokenizer& tokenizer, const api::DecisionRequest& request,
                                       std::size_t max_length);

// Loads the Qwen3.5 decoder of `model_dir`, tokenizer.json, calibration.json and
// vela_heads.safetensors. Throws checkpoint::LoadError or text::TokenizerLoadError.
std::unique_ptr<runtime::Engine> make_vela_decoder_engine(const std::filesystem::path& model_dir,
                                                          const VelaDecoderSettings& settings);

}  // namespace s1::decide
