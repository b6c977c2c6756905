// Edit distance and the "did you mean" choice.

#include "config/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace pkit::config::detail {
namespace {

char fold(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rolling rows: the swap rule looks two rows back.
    std::vector<std::size_t> before(b.size() + 1);
    std::vector<std::size_t> previous(b.size() + 1);
    std::vector<std::size_t> current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        previous[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                current[j] = std::min(current[j], before[j - 2] + 1);
            }
        }
        before.swap(previous);
        previous.swap(current);
    }
    return previous[b.size()];
}

std::optional<std::string> closest(std::string_view word,
                                   std::span<const std::string_view> candidates) {
    // Case is folded so "Command" finds "command" at distance 0 from the fold
    // and the comparison below still reports it (it differs from the word).
    std::string folded_word(word);
    std::ranges::transform(folded_word, folded_word.begin(), fold);
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    for (std::string_view candidate : candidates) {
        if (candidate == word) {
            continue;
        }
        std::size_t limit = std::clamp<std::size_t>(candidate.size() / 3, 1, 2);
        // Lengths further apart than the limit are at least that many edits apart:
        // skipped without the distance, so 10,000 service names cost little.
        if (std::max(word.size(), candidate.size()) - std::min(word.size(), candidate.size()) >
            limit) {
            continue;
        }
        std::string folded(candidate);
        std::ranges::transform(folded, folded.begin(), fold);
        std::size_t distance = edit_distance(folded_word, folded);
        if (distance <= limit && (!best || distance < best_distance)) {
            best = std::string(candidate);
            best_distance = distance;
        }
    }
    return best;
}

std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates) {
    std::vector<std::string_view> views(candidates.begin(), candidates.end());
    return closest(word, std::span<const std::string_view>(views));
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    auto close = closest(word, candidates);
    return close ? "; did you mean \"" + *close + "\"?" : std::string();
}

}  // namespace pkit::config::detail
