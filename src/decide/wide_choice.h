#pragma once
// Choice questions with more options than a model has answer letters, decided in rounds
// (StartLux-Decision's wide choice, models.md §4.3): the options are split into near-equal groups,
// each group is asked as one question, the top `keep` of every group go on to a final round, and the
// options that miss the final keep a small `residual` share of the probability in proportion to
// their group score, so every option keeps a non-zero probability. A final round still wider than
// the letters is decided the same way, recursively.
//
// The rounds are driven from outside (the engine runs the rows of a round as one batch and hands the
// distributions back), so the maths here never touches a model.

#include <cstddef>
#include <span>
#include <vector>

namespace s1::decide {

struct WideChoiceConfig {
  std::size_t group = 25;   // most options in one group
  std::size_t keep = 3;     // finalists per group
  double residual = 1e-3;   // the share the options outside the final keep between them
};

// Consecutive near-equal groups of `items`: ceil(n / group) of them, the first n mod count one
// longer than the rest.
std::vector<std::vector<std::size_t>> wide_choice_groups(std::span<const std::size_t> items, std::size_t group);

// The finalists of each group in group order: its `keep` most probable members, most probable
// first, ties in group order. probabilities[g] is group g's distribution in member order.
std::vector<std::size_t> wide_choice_finalists(const std::vector<std::vector<std::size_t>>& groups,
                                               const std::vector<std::vector<double>>& probabilities,
                                               std::size_t keep);

// The combined distribution over `items`: finalists get final_round[k] · (1 − residual); every other
// item gets residual · first_round[item] / Σ first_round over the non-finalists (the sum taken as 1
// when it is 0); then everything is divided by its sum. first_round is indexed like `items`,
// final_round like `finalists` (which holds positions into `items`).
std::vector<double> wide_choice_combine(std::span<const double> first_round, std::span<const std::size_t> finalists,
                                        std::span<const double> final_round, double residual);

// Whether every question of 2..max_options options gets narrower in each round, so the rounds end.
bool wide_choice_terminates(const WideChoiceConfig& config, std::size_t max_row_options, std::size_t max_options);

// One question's rounds. rows() are the option lists (indices into the question's options, in the
// order they are shown) to ask next; advance() takes one distribution per row.
class WideChoice {
 public:
  // option_count > max_row_options starts with the group round; otherwise it is one row.
  WideChoice(std::size_t option_count, std::size_t max_row_options, WideChoiceConfig config);

  [[nodiscard]] bool finished() const { return levels_.empty(); }
  [[nodiscard]] const std::vector<std::vector<std::size_t>>& rows() const { return rows_; }
  // Throws std::invalid_argument when the distributions do not match rows().
  void advance(const std::vector<std::vector<double>>& row_probabilities);
  // Over all options in their original order, once finished().
  [[nodiscard]] const std::vector<double>& probabilities() const { return probabilities_; }

 private:
  // One round: its options (question indices), and after a group round the first-round probability
  // of each option and the finalists (positions into options).
  struct Level {
    std::vector<std::size_t> options;
    std::vector<std::vector<std::size_t>> groups;  // positions into options; empty for a single row
    std::vector<double> first_round;
    std::vector<std::size_t> finalists;
  };
  void enter(std::vector<std::size_t> options);

  std::size_t max_row_options_;
  WideChoiceConfig config_;
  std::vector<Level> levels_;
  std::vector<std::vector<std::size_t>> rows_;
  std::vector<double> probabilities_;
};

}  // namespace s1::decide
