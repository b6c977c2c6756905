#include "config/pattern.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

namespace pkit::config {

namespace {

// RE2's budget for one pattern's program and DFA cache, allocated as a search needs
// it: plain patterns use a few KiB. A pattern whose DFA keeps needing new states
// ("a[ab]{20}c" on a line of a and b) fills the cache, resets it and falls back to the
// NFA, and filling a large cache is what costs: measured on 2 KiB lines, 0.13 us per
// byte with 256 KiB, 0.6 us with 1 MiB, 1 us with RE2's default 8 MiB. 256 KiB still
// holds hundreds of states of a program at the size limit.
constexpr std::int64_t k_max_mem = 256 << 10;

// RE2's reason names the offending part of the pattern, which can be the whole of it
// and hold control characters: shortened, and those escaped, so it stays one line.
std::string printable(const std::string& why) {
    constexpr std::size_t k_max = 120;
    std::size_t end = why.size();
    if (end > k_max) {
        end = k_max - 3;
        while (end > 0 && (static_cast<unsigned char>(why[end]) & 0xC0) == 0x80) {
            --end;  // not inside a UTF-8 sequence
        }
    }
    std::string out;
    for (std::size_t i = 0; i < end; ++i) {
        auto c = static_cast<unsigned char>(why[i]);
        if (c < 0x20 || c == 0x7f) {
            constexpr char k_hex[] = "0123456789abcdef";
            out += "\\x";
            out += k_hex[c >> 4];
            out += k_hex[c & 0xf];
        } else {
            out += why[i];
        }
    }
    if (end < why.size()) {
        out += "...";
    }
    return out;
}

}  // namespace

std::expected<Pattern, std::string> Pattern::compile(std::string source) {
    if (source.size() > k_max_bytes) {
        return std::unexpected("too long (" + std::to_string(source.size()) + " bytes, at most " +
                               std::to_string(k_max_bytes) + ")");
    }
    RE2::Options options;
    options.set_log_errors(false);  // the loader reports it, positioned
    options.set_max_mem(k_max_mem);
    options.set_never_capture(true);  // only "does it match" is asked
    auto re = std::make_shared<const RE2>(source, options);
    const std::string limit = "at most " + std::to_string(k_max_program) + ")";
    if (!re->ok() && re->error_code() == RE2::ErrorPatternTooLarge) {
        // Over what k_max_mem can hold: far over the limit, its size unknown.
        return std::unexpected("too complex (over 10,000 RE2 instructions, " + limit);
    }
    if (!re->ok()) {
        return std::unexpected(printable(re->error()));
    }
    if (re->ProgramSize() > k_max_program) {
        return std::unexpected("too complex (" + std::to_string(re->ProgramSize()) +
                               " RE2 instructions, " + limit);
    }
    return Pattern(std::move(re));
}

const std::string& Pattern::source() const {
    return m_re->pattern();
}

bool Pattern::search(std::string_view line) const {
    // The whole line is the context, so `$` and `\b` see what follows the window.
    return m_re->Match(re2::StringPiece(line.data(), line.size()), 0,
                       std::min(line.size(), k_searched_bytes), RE2::UNANCHORED, nullptr, 0);
}

}  // namespace pkit::config
