#include "ctl/time_text.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "config/values.hpp"
#include "ctl/global_options.hpp"

namespace pkit::ctl {

std::string clock_text(double at) {
    const double whole = std::floor(at);
    auto seconds = static_cast<std::time_t>(whole);
    std::tm local{};
    ::localtime_r(&seconds, &local);
    const int millis = std::clamp(static_cast<int>((at - whole) * 1000), 0, 999);
    char text[32];
    std::snprintf(text, sizeof text, "%02d:%02d:%02d.%03d", local.tm_hour, local.tm_min,
                  local.tm_sec, millis);
    return text;
}

std::string date_time_text(double at) {
    auto seconds = static_cast<std::time_t>(std::floor(at));
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char text[48];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S %Z", &local);
    return text;
}

std::string seconds_words(double seconds) {
    seconds = std::max(0.0, seconds);
    char text[32];
    if (seconds < 1) {
        std::snprintf(text, sizeof text, "%.2fs", seconds);
        return text;
    }
    if (seconds < 60) {
        std::snprintf(text, sizeof text, "%.1fs", seconds);
        return text;
    }
    auto duration = std::chrono::duration_cast<config::Duration>(
        std::chrono::duration<double>(std::min(seconds, 1e9)));
    return config::format_duration(duration);
}

std::optional<double> parse_duration_arg(std::string_view text) {
    constexpr double k_longest = 1e9;  // about 31 years: more is a typo, not a wait
    std::optional<double> seconds;
    if (auto duration = config::parse_duration(text)) {
        seconds = config::to_seconds(*duration);
    } else {
        double value = 0;
        const char* end = text.data() + text.size();
        auto [at, error] = std::from_chars(text.data(), end, value);
        if (!text.empty() && error == std::errc{} && at == end && std::isfinite(value)) {
            seconds = value;
        }
    }
    if (!seconds || *seconds < 0 || *seconds > k_longest) {
        return std::nullopt;
    }
    return seconds;
}

double duration_option(std::string_view option, std::string_view text, bool positive) {
    auto seconds = parse_duration_arg(text);
    if (!seconds) {
        throw usage_error(std::string(option) + ": \"" + std::string(text) +
                          "\" is not a duration (such as 5, 30s, 1m30s, 250ms)");
    }
    if (positive && *seconds <= 0) {
        throw usage_error(std::string(option) + ": must be more than 0");
    }
    return *seconds;
}

double unix_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace pkit::ctl
