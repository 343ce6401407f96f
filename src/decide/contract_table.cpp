#include "decide/contract_table.h"

#include <filesystem>

#include "decide/contracts/clef.h"
#include "decide/contracts/clm.h"
#include "decide/contracts/cua_s1.h"
#include "decide/contracts/decider.h"
#include "decide/contracts/embedding_similarity.h"
#include "decide/contracts/jemm.h"
#include "decide/contracts/jev_vl.h"
#include "decide/contracts/label_token.h"
#include "decide/contracts/laya.h"
#include "decide/contracts/lfm2_candidates.h"
#include "decide/contracts/mock.h"
#include "decide/contracts/open_jev.h"
#include "decide/contracts/readout_matrix.h"
#include "decide/contracts/startlux.h"
#include "decide/contracts/valen.h"
#include "decide/contracts/vela_decoder.h"
#include "decide/contracts/vela_encoder.h"
#include "decide/gguf_model.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

constexpr std::string_view decision_file_name = "s1serve.json";

// A model directory: a Hugging Face checkpoint plus s1serve.json, whose "contract" picks the row.
LoadedModel load_directory_contract(const std::filesystem::path& dir, const std::string& source) {
  const std::filesystem::path decision_file = dir / decision_file_name;
  if (!std::filesystem::exists(decision_file)) {
    if (model::decoder_family_of(dir)) {
      // A plain chat checkpoint (config.json of a decoder family we run, tokenizer.json, chat
      // template): the generic label-token contract, as SGLang's decision endpoint serves any model.
      const LabelTokenSettings settings = default_label_token_settings(dir);
      return LoadedModel{settings.name, settings.aliases, make_label_token_engine(dir, settings)};
    }
    throw ModelLoadError("cannot load model '" + source + "': " + decision_file.string() +
                         " is missing (a model directory needs an s1serve decision file naming its contract, "
                         "or a config.json of a decoder family s1serve runs; see docs/models.md)");
  }
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(decision_file);
  const std::string contract = reader.required<std::string>("contract");
  if (contract == embedding_similarity_contract) {
    const EmbeddingSimilaritySettings settings = read_embedding_similarity_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_embedding_similarity_engine(dir, settings)};
  }
  if (contract == label_token_contract) {
    const LabelTokenSettings settings = read_label_token_settings(reader, default_label_token_settings(dir));
    return LoadedModel{settings.name, settings.aliases, make_label_token_engine(dir, settings)};
  }
  if (contract == cua_s1_contract) {
    const CuaS1Settings settings = read_cua_s1_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_cua_s1_engine(dir, settings)};
  }
  if (contract == jemm_contract) {
    const JemmSettings settings = read_jemm_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_jemm_engine(dir, settings)};
  }
  if (contract == clef_contract) {
    const ClefSettings settings = read_clef_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_clef_engine(dir, settings)};
  }
  if (contract == clm_contract) {
    const ClmSettings settings = read_clm_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_clm_engine(dir, settings)};
  }
  if (contract == startlux_contract) {
    const StartLuxSettings settings = read_startlux_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_startlux_engine(dir, settings)};
  }
  if (contract == d3_contract || contract == pplx_decider_contract) {
    const auto family = contract == d3_contract ? CodeReadoutFamily::d3 : CodeReadoutFamily::pplx;
    const CodeReadoutSettings settings = read_code_readout_settings(reader, family);
    return LoadedModel{settings.name, settings.aliases, make_code_readout_engine(dir, settings)};
  }
  if (contract == decider_contract) {
    const DeciderSettings settings = read_decider_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_decider_engine(dir, settings)};
  }
  if (contract == lfm2_candidates_contract) {
    const Lfm2CandidatesSettings settings = read_lfm2_candidates_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_lfm2_candidates_engine(dir, settings)};
  }
  if (contract == open_jev_contract) {
    const OpenJevExport export_file = read_open_jev_export(dir / open_jev_export_file);
    const OpenJevSettings settings = read_open_jev_settings(reader, export_file);
    return LoadedModel{settings.name, settings.aliases, make_open_jev_engine(dir, export_file, settings)};
  }
  if (contract == laya_contract) {
    const LayaSettings settings = read_laya_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_laya_engine(dir, settings)};
  }
  if (contract == vela_encoder_contract) {
    const VelaSettings settings = read_vela_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_vela_engine(dir, settings)};
  }
  if (contract == jev_vl_contract) {
    const JevVlExport export_file = read_jev_vl_export(dir / jev_vl_export_file);
    const JevVlSettings settings = read_jev_vl_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_jev_vl_engine(dir, export_file, settings)};
  }
  if (contract == vela_decoder_contract) {
    const VelaDecoderSettings settings = read_vela_decoder_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_vela_decoder_engine(dir, settings)};
  }
  if (contract == valen_contract) {
    const ValenSettings settings = read_valen_settings(reader);
    return LoadedModel{settings.name, settings.aliases, make_valen_engine(dir, settings)};
  }
  reader.reject("contract",
                "'" + contract +
                    "' is not a known contract (known: clef, clm, cua-s1-text, d3, decider-2b, "
                    "embedding-similarity, jemm, jev-vl, label-token, laya, lfm2-candidate-likelihood, open-jev, "
                    "pplx-decider, startlux-instant, valen, vela-0.3b, vela-0.8b)");
}

// `load` with the loaders' errors as ModelLoadErrors naming the source.
template <typename Load>
LoadedModel naming_source(const std::string& source, Load load) {
  try {
    return load();
  } catch (const checkpoint::LoadError& error) {
    throw ModelLoadError("cannot load model '" + source + "': " + error.what());
  } catch (const text::TokenizerLoadError& error) {
    throw ModelLoadError("cannot load model '" + source + "': " + error.what());
  }
}

LoadedModel load_directory(const std::filesystem::path& dir, const std::string& source) {
  return naming_source(source, [&] { return load_directory_contract(dir, source); });
}

}  // namespace

LoadedModel load_model(const std::string& source) {
  constexpr std::string_view mock_prefix = "mock:";
  if (source.starts_with(mock_prefix)) {
    const std::string variant = source.substr(mock_prefix.size());
    auto engine = make_mock_engine(variant);
    if (!engine) {
      throw ModelLoadError("unknown test backend '" + source +
                           "' (known: mock:ramp, mock:uniform, mock:letters, mock:images, mock:broken, mock:slow)");
    }
    return LoadedModel{"mock-" + variant, {}, std::move(engine)};
  }
  std::error_code error;
  if (std::filesystem::is_directory(source, error)) return load_directory(source, source);
  if (is_default_model_name(source)) {
    const std::filesystem::path dir = default_model_directory();
    if (!std::filesystem::exists(dir / decision_file_name, error)) {
      throw ModelLoadError("model '" + source + "' (all-MiniLM-L6-v2) is not installed in " + dir.string() +
                           ": run scripts/fetch-default-model (or scripts/setup), or set S1SERVE_MODELS to the "
                           "directory that holds it");
    }
    return load_directory(dir, source);
  }
  if (std::filesystem::is_regular_file(source, error) && std::filesystem::path(source).extension() == ".gguf") {
    return naming_source(source, [&] { return load_gguf_model(source); });
  }
  if (std::filesystem::exists(source, error)) {
    throw ModelLoadError("cannot load model '" + source +
                         "': not a directory or a .gguf file (a model is a "
                         "checkpoint directory with an s1serve.json decision file, or a GGUF file)");
  }
  throw ModelLoadError("cannot load model '" + source +
                       "': no such directory and not a known model name (known: minilm, all-minilm-l6-v2, "
                       "mock:NAME)");
}

std::optional<std::filesystem::path> checkpoint_location(const std::string& source) {
  if (source.starts_with("mock:")) return std::nullopt;
  std::error_code error;
  // The order load_model resolves a source in: a directory wins over a known name.
  if (!std::filesystem::is_directory(source, error) && is_default_model_name(source)) return default_model_directory();
  return std::filesystem::path(source);
}

}  // namespace s1::decide
