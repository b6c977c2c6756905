#pragma once
// An output pattern ([stop_when]/[give_up_when] output_matches, SPEC §2): a regular
// expression in RE2 syntax, searched in one line in time linear in the line's length.
// RE2 builds no backtracking stack, so no pattern and no line can overflow pkitd's
// stack, which std::regex could on a long line.
//
// Linear is not cheap: when RE2's DFA runs out of states (a counted repetition such as
// "\w{1000}x", or "a[ab]{20}c" on a line of a and b) it falls back to its NFA, whose
// cost per byte grows with the program's size: measured, about 7 ns per instruction
// and byte, so 155 ms for "\w{1000}x" on one 16 KiB line. Two bounds keep the worst
// line in a few milliseconds: a program of at most k_max_program instructions, and
// only the first k_searched_bytes of a line searched (250 x 2048 x 7 ns = 3.6 ms).
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
    // The largest program accepted, in RE2 instructions (RE2::ProgramSize()). Plain
    // words, alternations and short classes take a few dozen; each copy of a counted
    // repetition counts ("\w{100}" is 300), and Unicode classes are large ("\pL"
    // alone is about 1,200).
    static constexpr int k_max_program = 250;
    // How much of a line is searched: its first 2 KiB. A match that would need a byte
    // past them is not found; `$` and `\b` still see the line's real end and the next
    // character.
    static constexpr std::size_t k_searched_bytes = 2048;

    // Compiles `source`, or says in plain words why it cannot be a pattern: too long,
    // too complex (a program over k_max_program), or RE2's own reason (a backreference,
    // an unbalanced parenthesis). Never throws for a bad pattern.
    static std::expected<Pattern, std::string> compile(std::string source);

    const std::string& source() const;
    // Whether the pattern matches anywhere in the first k_searched_bytes of `line`
    // (unanchored, like grep).
    bool search(std::string_view line) const;

    bool operator==(const Pattern& other) const { return source() == other.source(); }

private:
    explicit Pattern(std::shared_ptr<const re2::RE2> re) : m_re(std::move(re)) {}

    std::shared_ptr<const re2::RE2> m_re;  // never null
};

}  // namespace pkit::config
