// Formatting and parsing the lines of a log file (SPEC §18).

#include "daemon/shell/logfile/log_format.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>
#include "proto/json_writer.hpp"

namespace pkit::shell {
namespace {

constexpr std::int64_t k_min_ms = 0;
constexpr std::int64_t k_max_ms = 253402300799999;  // 9999-12-31T23:59:59.999Z

// Days since 1970-01-01 of a proleptic Gregorian date, and back (Howard Hinnant's
// well-known algorithms, written out here).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
    std::int64_t year;
    unsigned month;
    unsigned day;
};

Civil civil_from_days(std::int64_t z) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

void put_digits(char* at, std::int64_t value, int width) {
    for (int i = width - 1; i >= 0; --i) {
        at[i] = static_cast<char>('0' + value % 10);
        value /= 10;
    }
}

// The digits at text[from, from + width), or -1.
std::int64_t digits(std::string_view text, std::size_t from, int width) {
    std::int64_t value = 0;
    for (int i = 0; i < width; ++i) {
        char c = text[from + static_cast<std::size_t>(i)];
        if (c < '0' || c > '9') {
            return -1;
        }
        value = value * 10 + (c - '0');
    }
    return value;
}

std::string_view stream_word(core::Stream stream) {
    return stream == core::Stream::stdout_ ? "out" : "err";
}

}  // namespace

void append_rfc3339_ms(std::string& out, double at) {
    std::int64_t ms = std::isfinite(at) ? static_cast<std::int64_t>(std::floor(at * 1000.0)) : 0;
    ms = std::clamp(ms, k_min_ms, k_max_ms);
    std::int64_t days = ms / 86'400'000;
    std::int64_t in_day = ms % 86'400'000;
    Civil date = civil_from_days(days);
    char text[24] = {'0', '0', '0', '0', '-', '0', '0', '-', '0', '0', 'T', '0',
                     '0', ':', '0', '0', ':', '0', '0', '.', '0', '0', '0', 'Z'};
    put_digits(text, date.year, 4);
    put_digits(text + 5, date.month, 2);
    put_digits(text + 8, date.day, 2);
    put_digits(text + 11, in_day / 3'600'000, 2);
    put_digits(text + 14, in_day / 60'000 % 60, 2);
    put_digits(text + 17, in_day / 1000 % 60, 2);
    put_digits(text + 20, in_day % 1000, 3);
    out.append(text, sizeof text);
}

std::optional<double> parse_rfc3339_ms(std::string_view text) {
    if (text.size() != 24 || text[4] != '-' || text[7] != '-' || text[10] != 'T' ||
        text[13] != ':' || text[16] != ':' || text[19] != '.' || text[23] != 'Z') {
        return std::nullopt;
    }
    std::int64_t year = digits(text, 0, 4);
    std::int64_t month = digits(text, 5, 2);
    std::int64_t day = digits(text, 8, 2);
    std::int64_t hour = digits(text, 11, 2);
    std::int64_t minute = digits(text, 14, 2);
    std::int64_t second = digits(text, 17, 2);
    std::int64_t ms = digits(text, 20, 3);
    if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
        minute < 0 || minute > 59 || second < 0 || second > 60 || ms < 0) {
        return std::nullopt;
    }
    std::int64_t days =
        days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    std::int64_t total = ((days * 24 + hour) * 60 + minute) * 60 + second;
    // Milliseconds as an exact count first: 0.123 is not a double, 123 ms is.
    return static_cast<double>(total * 1000 + ms) / 1000.0;
}

void append_log_line(std::string& out, config::LogFormat format, std::string_view service,
                     const LogRecord& record) {
    switch (format) {
        case config::LogFormat::text:
            append_rfc3339_ms(out, record.at);
            out += ' ';
            out += stream_word(record.stream);
            out += ' ';
            out += record.text;
            break;
        case config::LogFormat::json: {
            std::string at;
            append_rfc3339_ms(at, record.at);
            proto::JsonWriter json(out);
            json.begin_object();
            json.key("at");
            json.value(at);
            json.key("service");
            json.value(service);
            json.key("run");
            json.value(record.run);
            json.key("stream");
            json.value(core::to_string(record.stream));
            json.key("text");
            json.value(record.text);
            json.end_object();
            break;
        }
        case config::LogFormat::raw:
            out += record.text;
            break;
    }
    out += '\n';
}

std::optional<ParsedLine> parse_log_line(config::LogFormat format, std::string_view line) {
    switch (format) {
        case config::LogFormat::text: {
            // "TIME out TEXT": 24 + 1 + 3 + 1 bytes before the text.
            if (line.size() < 29 || line[24] != ' ' || line[28] != ' ') {
                return std::nullopt;
            }
            auto at = parse_rfc3339_ms(line.substr(0, 24));
            std::string_view word = line.substr(25, 3);
            if (!at || (word != "out" && word != "err")) {
                return std::nullopt;
            }
            return ParsedLine{word == "out" ? core::Stream::stdout_ : core::Stream::stderr_, *at,
                              std::string(line.substr(29))};
        }
        case config::LogFormat::json: {
            nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
            if (object.is_discarded() || !object.is_object()) {
                return std::nullopt;
            }
            auto at = object.find("at");
            auto stream = object.find("stream");
            auto text = object.find("text");
            if (at == object.end() || !at->is_string() || stream == object.end() ||
                !stream->is_string() || text == object.end() || !text->is_string()) {
                return std::nullopt;
            }
            auto when = parse_rfc3339_ms(at->get_ref<const std::string&>());
            const std::string& name = stream->get_ref<const std::string&>();
            if (!when || (name != "stdout" && name != "stderr")) {
                return std::nullopt;
            }
            return ParsedLine{name == "stdout" ? core::Stream::stdout_ : core::Stream::stderr_,
                              *when, text->get<std::string>()};
        }
        case config::LogFormat::raw:
            return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace pkit::shell
