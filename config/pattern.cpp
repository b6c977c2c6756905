#include "config/pattern.hpp"

#include <re2/re2.h>

#include <cstdint>
#include <memory>
#include <string>

namespace pkit::config {

namespace {

// RE2's budget for one pattern's programs and DFA caches, allocated as a search needs
// it: plain patterns use a few KiB. A smaller budget makes counted repetitions
// ("\\w{1000}x") outgrow the DFA and fall back to RE2's NFA, still linear but seconds
// per 16 KiB line; with 8 MiB (RE2's default) a few hundred ms at worst.
constexpr std::int64_t k_max_mem = 8 << 20;

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
    if (!re->ok()) {
        return std::unexpected(printable(re->error()));
    }
    return Pattern(std::move(re));
}

const std::string& Pattern::source() const {
    return m_re->pattern();
}

bool Pattern::search(std::string_view line) const {
    return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *m_re);
}

}  // namespace pkit::config
