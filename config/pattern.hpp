#pragma once
// An output pattern ([stop_when]/[give_up_when] output_matches, SPEC §2): a regular
// expression in RE2 syntax, searched in one line in time linear in the line's length.
// RE2 builds no backtracking stack, so no pattern and no line can overflow pkitd's
// stack or stall its loop, which std::regex could on a long line.
//
// A value: copies share one compiled, immutable RE2, and == compares the source text,
// so the model stays comparable for reload's change detection. re2 is pkitconfig's
// private dependency; this header does not include it. The source is the RE2's own
// copy (RE2::pattern()): a Pattern is one pointer, which every service's two
// predicates carry whether they hold a pattern or not.

#include <cstddef>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace re2 {
class RE2;
}

namespace pkit::config {

class Pattern {
public:
    // The longest source accepted, in bytes.
    static constexpr std::size_t k_max_bytes = 4096;

    // Compiles `source`, or says in plain words why it cannot be a pattern: too long,
    // or RE2's own reason (a backreference, an unbalanced parenthesis, a program over
    // RE2's memory budget). Never throws for a bad pattern.
    static std::expected<Pattern, std::string> compile(std::string source);

    const std::string& source() const;
    // Whether the pattern matches anywhere in `line` (unanchored, like grep).
    bool search(std::string_view line) const;

    bool operator==(const Pattern& other) const { return source() == other.source(); }

private:
    explicit Pattern(std::shared_ptr<const re2::RE2> re) : m_re(std::move(re)) {}

    std::shared_ptr<const re2::RE2> m_re;  // never null
};

}  // namespace pkit::config
