// parse_schedule: crontab(5)'s five fields, its macros, and "every DURATION".

#include "config/schedule.hpp"

#include <array>
#include <optional>
#include <vector>

#include "config/values.hpp"

namespace pkit::config {
namespace {

struct Field {
    std::string_view name;  // as messages name it
    int low;
    int high;                                       // day-of-week takes 7 (Sunday) beside 0-6
    const std::array<std::string_view, 12>* names;  // or null
    int first_name_value;                           // the value of names[0]
};

constexpr std::array<std::string_view, 12> k_month_names{"jan", "feb", "mar", "apr", "may", "jun",
                                                         "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 12> k_day_names{"sun", "mon", "tue", "wed", "thu", "fri",
                                                       "sat", "",    "",    "",    "",    ""};

constexpr std::array<Field, 5> k_fields{{
    {"minute", 0, 59, nullptr, 0},
    {"hour", 0, 23, nullptr, 0},
    {"day-of-month", 1, 31, nullptr, 0},
    {"month", 1, 12, &k_month_names, 1},
    {"day-of-week", 0, 7, &k_day_names, 0},
}};

std::string quoted(std::string_view text) {
    std::string out = "\"";
    out += text;
    out += '"';
    return out;
}

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string range_text(const Field& f) {
    std::string out = std::to_string(f.low) + "-" + std::to_string(f.high);
    if (f.names == &k_month_names) {
        out += " or jan-dec";
    } else if (f.names == &k_day_names) {
        out += " or sun-sat";
    }
    return out;
}

// One value of a field: digits, or a name where the field has names.
std::expected<int, std::string> value_of(const Field& f, std::string_view token) {
    if (token.empty()) {
        return std::unexpected(std::string(f.name) + " has an empty value");
    }
    if (token.size() <= 3 && token[0] >= '0' && token[0] <= '9') {
        int value = 0;
        for (char c : token) {
            if (c < '0' || c > '9') {
                return std::unexpected(std::string(f.name) + " " + quoted(token) +
                                       " is not a number");
            }
            value = value * 10 + (c - '0');
        }
        if (value < f.low || value > f.high) {
            return std::unexpected(std::string(f.name) + " " + std::to_string(value) +
                                   " is out of range " + range_text(f));
        }
        return value;
    }
    if (f.names != nullptr && token.size() == 3) {
        std::string name;
        for (char c : token) {
            name += lower(c);
        }
        for (std::size_t i = 0; i < f.names->size(); ++i) {
            if (!(*f.names)[i].empty() && (*f.names)[i] == name) {
                return f.first_name_value + static_cast<int>(i);
            }
        }
    }
    return std::unexpected(std::string(f.name) + " " + quoted(token) + " is not " +
                           (f.names != nullptr ? "a number or a name (" + range_text(f) + ")"
                                               : "a number (" + range_text(f) + ")"));
}

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        std::size_t at = text.find(sep, start);
        parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
        if (at == std::string_view::npos) {
            return parts;
        }
        start = at + 1;
    }
}

// One field: a comma list of `*`, N, N-M, each with an optional /STEP (N/STEP is
// N-high/STEP). Sets bits low..high of `bits` (day-of-week 7 included).
std::expected<std::bitset<64>, std::string> parse_field(const Field& f, std::string_view text) {
    std::bitset<64> bits;
    for (std::string_view item : split(text, ',')) {
        std::string_view range = item;
        int step = 1;
        if (std::size_t slash = item.find('/'); slash != std::string_view::npos) {
            range = item.substr(0, slash);
            std::string_view step_text = item.substr(slash + 1);
            int value = 0;
            bool digits = !step_text.empty() && step_text.size() <= 3;
            for (char c : step_text) {
                digits = digits && c >= '0' && c <= '9';
                value = value * 10 + (c - '0');
            }
            if (!digits) {
                return std::unexpected(std::string(f.name) + " step " + quoted(step_text) +
                                       " is not a number");
            }
            if (value < 1 || value > f.high - f.low + 1) {
                return std::unexpected(std::string(f.name) + " step " + std::to_string(value) +
                                       " is out of range 1-" + std::to_string(f.high - f.low + 1));
            }
            step = value;
        }
        int first = f.low;
        int last = f.high;
        if (range == "*") {
            if (&f == &k_fields[4]) {
                last = 6;  // `*` is each day once
            }
        } else if (std::size_t dash = range.find('-'); dash != std::string_view::npos) {
            auto a = value_of(f, range.substr(0, dash));
            if (!a) {
                return std::unexpected(a.error());
            }
            auto b = value_of(f, range.substr(dash + 1));
            if (!b) {
                return std::unexpected(b.error());
            }
            if (*a > *b) {
                return std::unexpected(std::string(f.name) + " range " + quoted(range) +
                                       " goes backwards");
            }
            first = *a;
            last = *b;
        } else {
            auto a = value_of(f, range);
            if (!a) {
                return std::unexpected(a.error());
            }
            first = *a;
            last = item.find('/') != std::string_view::npos ? f.high : *a;
        }
        for (int v = first; v <= last; v += step) {
            bits.set(static_cast<std::size_t>(v));
        }
    }
    return bits;
}

template <std::size_t N>
std::bitset<N> narrow(const std::bitset<64>& wide) {
    std::bitset<N> out;
    for (std::size_t i = 0; i < N; ++i) {
        out[i] = wide[i];
    }
    return out;
}

// The most days each month can have (February in a leap year).
constexpr std::array<int, 13> k_max_days{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

std::expected<CronSpec, std::string> parse_cron(std::string_view text) {
    std::vector<std::string_view> fields;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
            ++i;
        }
        std::size_t start = i;
        while (i < text.size() && text[i] != ' ' && text[i] != '\t') {
            ++i;
        }
        if (i > start) {
            fields.push_back(text.substr(start, i - start));
        }
    }
    if (fields.size() != 5) {
        return std::unexpected(
            "expected five fields (minute hour day-of-month month "
            "day-of-week), a macro such as @daily, or \"every DURATION\"; "
            "got " +
            std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields"));
    }
    std::array<std::bitset<64>, 5> bits;
    for (std::size_t f = 0; f < 5; ++f) {
        auto parsed = parse_field(k_fields[f], fields[f]);
        if (!parsed) {
            return std::unexpected(parsed.error());
        }
        bits[f] = *parsed;
    }
    CronSpec cron;
    cron.minutes = narrow<60>(bits[0]);
    cron.hours = narrow<24>(bits[1]);
    cron.days = narrow<32>(bits[2]);
    cron.months = narrow<13>(bits[3]);
    cron.weekdays = narrow<7>(bits[4]);
    if (bits[4][7]) {
        cron.weekdays.set(0);  // 7 is Sunday too
    }
    cron.minutes_restricted = !fields[0].starts_with('*');
    cron.hours_restricted = !fields[1].starts_with('*');
    cron.days_restricted = !fields[2].starts_with('*');
    cron.weekdays_restricted = !fields[4].starts_with('*');
    // A day-of-month that no month given has would never run (0 0 30 2 *).
    if (cron.days_restricted && !cron.weekdays_restricted) {
        bool comes = false;
        for (int m = 1; m <= 12 && !comes; ++m) {
            for (int d = 1; d <= k_max_days[static_cast<std::size_t>(m)] && !comes; ++d) {
                comes = cron.months[static_cast<std::size_t>(m)] &&
                        cron.days[static_cast<std::size_t>(d)];
            }
        }
        if (!comes) {
            return std::unexpected("day-of-month " + quoted(fields[2]) + " never comes in month " +
                                   quoted(fields[3]));
        }
    }
    return cron;
}

struct Macro {
    std::string_view name;
    std::string_view fields;
};

constexpr std::array<Macro, 7> k_macros{{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

std::expected<Schedule, std::string> parse_inner(std::string_view text) {
    Schedule schedule;
    schedule.expression = std::string(text);
    if (text.starts_with("every ") || text == "every") {
        std::string_view period = text.substr(text.size() > 6 ? 6 : text.size());
        while (period.starts_with(' ')) {
            period.remove_prefix(1);
        }
        auto d = parse_duration(period);
        if (!d) {
            return std::unexpected(quoted(period) +
                                   " is not a duration (like \"30s\", \"5m\", \"1h30m\")");
        }
        if (*d < k_min_every) {
            return std::unexpected("the period must be at least 1s");
        }
        schedule.kind = Schedule::Kind::every;
        schedule.every = *d;
        return schedule;
    }
    std::string_view fields = text;
    if (text.starts_with('@')) {
        std::string name;
        for (char c : text) {
            name += lower(c);
        }
        fields = {};
        for (const Macro& m : k_macros) {
            if (m.name == name) {
                fields = m.fields;
            }
        }
        if (name == "@reboot") {
            return std::unexpected(
                "@reboot is not a schedule here: a oneshot job without "
                "`schedule` runs once at start");
        }
        if (fields.empty()) {
            return std::unexpected(
                "unknown macro; use @hourly, @daily (@midnight), @weekly, "
                "@monthly or @yearly (@annually)");
        }
    }
    auto cron = parse_cron(fields);
    if (!cron) {
        return std::unexpected(cron.error());
    }
    schedule.kind = Schedule::Kind::cron;
    schedule.cron = *cron;
    return schedule;
}

}  // namespace

std::expected<Schedule, std::string> parse_schedule(std::string_view text) {
    auto schedule = parse_inner(text);
    if (!schedule) {
        return std::unexpected(quoted(text) + ": " + schedule.error());
    }
    return schedule;
}

}  // namespace pkit::config
