// Value forms of SPEC §2. Everything here is pure: no I/O, no locale.

#include "config/values.hpp"

#include "config/capabilities.hpp"
#include "config/suggest.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

namespace pkit::config {
namespace {

constexpr std::int64_t k_max_ns = std::numeric_limits<std::int64_t>::max();

struct Unit {
    std::string_view suffix;
    std::int64_t ns;
};

// Longest suffix first, so "ms" is not read as "m" followed by junk. The order of
// this table is also the required order of parts in a string ("1h30m", not "30m1h").
constexpr std::array<Unit, 4> k_units{{
    {"h", 3600'000'000'000},
    {"m", 60'000'000'000},
    {"s", 1'000'000'000},
    {"ms", 1'000'000},
}};

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// Reads "DIGITS[.DIGITS]" times unit_ns into out; false on overflow or no digits.
bool scale(std::string_view whole, std::string_view fraction, std::int64_t unit_ns,
           std::int64_t& out) {
    std::int64_t value = 0;
    for (char c : whole) {
        if (__builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, c - '0', &value)) {
            return false;
        }
    }
    if (__builtin_mul_overflow(value, unit_ns, &value)) {
        return false;
    }
    // The fraction contributes at most unit_ns; digits past nanosecond precision
    // are dropped.
    std::int64_t place = unit_ns;
    for (char c : fraction) {
        place /= 10;
        if (place == 0) {
            break;
        }
        if (__builtin_add_overflow(value, (c - '0') * place, &value)) {
            return false;
        }
    }
    out = value;
    return true;
}

struct SignalName {
    int number;
    std::string_view name;  // without "SIG"
};

// signal(7) names on Linux. The first entry for a number is the canonical one.
constexpr std::array<SignalName, 34> k_signals{{
    {SIGHUP, "HUP"},       {SIGINT, "INT"},     {SIGQUIT, "QUIT"}, {SIGILL, "ILL"},
    {SIGTRAP, "TRAP"},     {SIGABRT, "ABRT"},   {SIGABRT, "IOT"},  {SIGBUS, "BUS"},
    {SIGFPE, "FPE"},       {SIGKILL, "KILL"},   {SIGUSR1, "USR1"}, {SIGSEGV, "SEGV"},
    {SIGUSR2, "USR2"},     {SIGPIPE, "PIPE"},   {SIGALRM, "ALRM"}, {SIGTERM, "TERM"},
    {SIGSTKFLT, "STKFLT"}, {SIGCHLD, "CHLD"},   {SIGCHLD, "CLD"},  {SIGCONT, "CONT"},
    {SIGSTOP, "STOP"},     {SIGTSTP, "TSTP"},   {SIGTTIN, "TTIN"}, {SIGTTOU, "TTOU"},
    {SIGURG, "URG"},       {SIGXCPU, "XCPU"},   {SIGXFSZ, "XFSZ"}, {SIGVTALRM, "VTALRM"},
    {SIGPROF, "PROF"},     {SIGWINCH, "WINCH"}, {SIGIO, "IO"},     {SIGIO, "POLL"},
    {SIGPWR, "PWR"},       {SIGSYS, "SYS"},
}};

constexpr int k_max_signal = 64;

std::optional<int> parse_number(std::string_view text) {
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return value;
}

// "RTMIN", "RTMIN+3", "RTMAX-2": relative to the run-time range of this system.
std::optional<int> parse_realtime(std::string_view text) {
    int base = 0;
    int sign = 1;
    if (text.starts_with("RTMIN")) {
        base = SIGRTMIN;
    } else if (text.starts_with("RTMAX")) {
        base = SIGRTMAX;
        sign = -1;
    } else {
        return std::nullopt;
    }
    text.remove_prefix(5);
    if (text.empty()) {
        return base;
    }
    if (text.front() != (sign > 0 ? '+' : '-')) {
        return std::nullopt;
    }
    auto offset = parse_number(text.substr(1));
    if (!offset) {
        return std::nullopt;
    }
    int signo = base + sign * *offset;
    if (signo < SIGRTMIN || signo > SIGRTMAX) {
        return std::nullopt;
    }
    return signo;
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
    if (text == "0") {
        return Duration{0};
    }
    std::int64_t total = 0;
    std::size_t next_unit = 0;  // index into k_units: parts must go from big to small
    while (!text.empty()) {
        std::size_t i = 0;
        while (i < text.size() && is_digit(text[i])) {
            ++i;
        }
        std::string_view whole = text.substr(0, i);
        std::string_view fraction;
        if (i < text.size() && text[i] == '.') {
            std::size_t start = ++i;
            while (i < text.size() && is_digit(text[i])) {
                ++i;
            }
            fraction = text.substr(start, i - start);
            if (fraction.empty()) {
                return std::nullopt;
            }
        }
        if (whole.empty()) {
            return std::nullopt;
        }
        text.remove_prefix(i);
        std::size_t unit = next_unit;
        // "ms" must win over "m"; k_units lists "m" before "ms" only for ordering.
        if (text.starts_with("ms")) {
            unit = 3;
        } else {
            while (unit < k_units.size() && !text.starts_with(k_units[unit].suffix)) {
                ++unit;
            }
        }
        if (unit < next_unit || unit >= k_units.size()) {
            return std::nullopt;
        }
        text.remove_prefix(k_units[unit].suffix.size());
        next_unit = unit + 1;
        std::int64_t part = 0;
        if (!scale(whole, fraction, k_units[unit].ns, part) ||
            __builtin_add_overflow(total, part, &total)) {
            return std::nullopt;
        }
    }
    if (next_unit == 0) {
        return std::nullopt;  // empty text
    }
    return Duration{total};
}

std::optional<Duration> duration_from_seconds(double seconds) {
    // Compare in the double domain first, so the conversion below cannot overflow.
    if (!std::isfinite(seconds) || seconds < 0 || seconds * 1e9 >= static_cast<double>(k_max_ns)) {
        return std::nullopt;
    }
    return Duration{std::llround(seconds * 1e9)};
}

std::optional<int> parse_signal(std::string_view text) {
    if (!text.empty() && is_digit(text.front())) {
        auto number = parse_number(text);
        if (!number || *number < 1 || *number > k_max_signal) {
            return std::nullopt;
        }
        return number;
    }
    if (text.starts_with("SIG")) {
        text.remove_prefix(3);
        // "SIG40": the form signal_name() gives for signals without a name.
        if (!text.empty() && is_digit(text.front())) {
            auto number = parse_number(text);
            if (number && *number >= 1 && *number <= k_max_signal) {
                return number;
            }
            return std::nullopt;
        }
    }
    for (const auto& entry : k_signals) {
        if (entry.name == text) {
            return entry.number;
        }
    }
    return parse_realtime(text);
}

std::string signal_name(int signo) {
    for (const auto& entry : k_signals) {
        if (entry.number == signo) {
            return "SIG" + std::string(entry.name);
        }
    }
    return "SIG" + std::to_string(signo);
}

std::string signal_suggestion(std::string_view text) {
    std::string upper(text);
    for (char& c : upper) {
        c = c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    }
    if (upper != text && parse_signal(upper)) {
        return "; signal names are upper case: \"" + upper + "\"";
    }
    const bool with_sig = upper.starts_with("SIG");
    std::vector<std::string> names;
    names.reserve(k_signals.size());
    for (const auto& entry : k_signals) {
        names.push_back((with_sig ? "SIG" : "") + std::string(entry.name));
    }
    return detail::did_you_mean(text, names);
}

// Sizes take binary suffixes only. "KB"/"MB" are refused rather than guessed: half of
// all tools read them as 1000s and half as 1024s, and a byte bound should not be a
// guess. Fractions ("1.5MiB") are refused too; write "1536KiB".
std::optional<std::uint64_t> parse_size(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size() && is_digit(text[i])) {
        ++i;
    }
    if (i == 0) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + i, value);
    if (ec != std::errc{}) {
        return std::nullopt;
    }
    std::string_view suffix = text.substr(i);
    std::uint64_t unit = 0;
    if (suffix.empty() || suffix == "B") {
        unit = 1;
    } else if (suffix == "KiB") {
        unit = 1ULL << 10;
    } else if (suffix == "MiB") {
        unit = 1ULL << 20;
    } else if (suffix == "GiB") {
        unit = 1ULL << 30;
    } else if (suffix == "TiB") {
        unit = 1ULL << 40;
    } else {
        return std::nullopt;
    }
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(value, unit, &bytes)) {
        return std::nullopt;
    }
    return bytes;
}

std::string format_size(std::uint64_t bytes) {
    static constexpr std::pair<int, const char*> k_units[] = {
        {40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}};
    for (const auto& [shift, unit] : k_units) {
        const std::uint64_t size = 1ULL << shift;
        if (bytes >= size && bytes % size == 0) {
            std::string text = std::to_string(bytes >> shift);
            text += unit;
            return text;
        }
    }
    std::string text = std::to_string(bytes);
    text += "B";
    return text;
}

// Two most significant units, truncated: a table column wants "3m12s", not
// "3m12.481s". Below a second, whole milliseconds.
std::string format_duration(Duration d) {
    if (d < Duration::zero()) {
        // -min() does not exist (it overflows back to min(), and this recursed without
        // end): min() is shown as max(), a nanosecond short.
        return "-" + format_duration(d == Duration::min() ? Duration::max() : -d);
    }
    using std::chrono::duration_cast;
    auto ms = duration_cast<std::chrono::milliseconds>(d).count();
    if (ms < 1000) {
        return d == Duration::zero() ? "0s" : std::to_string(ms) + "ms";
    }
    auto s = ms / 1000;
    auto two = [](long long big, const char* big_unit, long long small, const char* small_unit) {
        std::string out = std::to_string(big) + big_unit;
        if (small != 0) {
            out += std::to_string(small) + small_unit;
        }
        return out;
    };
    if (s < 60) {
        return std::to_string(s) + "s";
    }
    if (s < 3600) {
        return two(s / 60, "m", s % 60, "s");
    }
    if (s < 86400) {
        return two(s / 3600, "h", s / 60 % 60, "m");
    }
    return two(s / 86400, "d", s / 3600 % 24, "h");
}

double to_seconds(Duration d) {
    return static_cast<double>(d.count()) / 1e9;
}

}  // namespace pkit::config

// Capability names (capabilities.hpp): here, with the other pure value tables, so
// that spec_diff's rows may name them (tests/check-purity: pure parts only).

namespace pkit::config {
namespace {

// Indexed by number: capabilities(7), include/uapi/linux/capability.h.
constexpr std::array<std::string_view, k_last_capability + 1> k_names{"CAP_CHOWN",
                                                                      "CAP_DAC_OVERRIDE",
                                                                      "CAP_DAC_READ_SEARCH",
                                                                      "CAP_FOWNER",
                                                                      "CAP_FSETID",
                                                                      "CAP_KILL",
                                                                      "CAP_SETGID",
                                                                      "CAP_SETUID",
                                                                      "CAP_SETPCAP",
                                                                      "CAP_LINUX_IMMUTABLE",
                                                                      "CAP_NET_BIND_SERVICE",
                                                                      "CAP_NET_BROADCAST",
                                                                      "CAP_NET_ADMIN",
                                                                      "CAP_NET_RAW",
                                                                      "CAP_IPC_LOCK",
                                                                      "CAP_IPC_OWNER",
                                                                      "CAP_SYS_MODULE",
                                                                      "CAP_SYS_RAWIO",
                                                                      "CAP_SYS_CHROOT",
                                                                      "CAP_SYS_PTRACE",
                                                                      "CAP_SYS_PACCT",
                                                                      "CAP_SYS_ADMIN",
                                                                      "CAP_SYS_BOOT",
                                                                      "CAP_SYS_NICE",
                                                                      "CAP_SYS_RESOURCE",
                                                                      "CAP_SYS_TIME",
                                                                      "CAP_SYS_TTY_CONFIG",
                                                                      "CAP_MKNOD",
                                                                      "CAP_LEASE",
                                                                      "CAP_AUDIT_WRITE",
                                                                      "CAP_AUDIT_CONTROL",
                                                                      "CAP_SETFCAP",
                                                                      "CAP_MAC_OVERRIDE",
                                                                      "CAP_MAC_ADMIN",
                                                                      "CAP_SYSLOG",
                                                                      "CAP_WAKE_ALARM",
                                                                      "CAP_BLOCK_SUSPEND",
                                                                      "CAP_AUDIT_READ",
                                                                      "CAP_PERFMON",
                                                                      "CAP_BPF",
                                                                      "CAP_CHECKPOINT_RESTORE"};

bool same_letters(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::toupper(static_cast<unsigned char>(a[i])) !=
            std::toupper(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

}  // namespace

std::optional<int> capability_number(std::string_view name) {
    constexpr std::string_view k_prefix = "CAP_";
    const bool prefixed =
        name.size() > k_prefix.size() && same_letters(name.substr(0, 4), k_prefix);
    const std::string_view bare = prefixed ? name.substr(k_prefix.size()) : name;
    for (std::size_t i = 0; i < k_names.size(); ++i) {
        if (same_letters(k_names[i].substr(k_prefix.size()), bare)) {
            return static_cast<int>(i);
        }
    }
    return std::nullopt;
}

std::string capability_name(int number) {
    if (number < 0 || number > k_last_capability) {
        return "CAP_?";
    }
    return std::string(k_names[static_cast<std::size_t>(number)]);
}

std::vector<std::string> capability_names(std::uint64_t mask) {
    std::vector<std::string> out;
    for (int i = 0; i <= k_last_capability; ++i) {
        if ((mask >> i) & 1U) {
            out.push_back(capability_name(i));
        }
    }
    return out;
}

std::vector<std::string_view> all_capability_names() {
    return {k_names.begin(), k_names.end()};
}

}  // namespace pkit::config
