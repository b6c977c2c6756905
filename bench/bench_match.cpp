// What `output_matches` costs: a service prints 1 MiB of output (10,486 lines of 99
// 'x') and exits, restarted at zero backoff; pkitd's CPU (utime + stime from
// /proc/PID/stat) per MiB, without a predicate and with `[stop_when] output_matches`
// set to a pattern that never matches. Rounds alternate between the variants so that
// all see the same machine load; medians are printed, with the difference.
//
// Patterns: "realistic" `(ERROR|FATAL).*(timeout|refused)`, and "x*y", which a
// backtracking matcher searches in time quadratic in the line's length (RE2 is linear).
// --pattern adds one of your own.
//
//   bench_match --pkitd PATH [--seconds 5] [--rounds 3] [--pattern REGEX]

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

struct Variant {
    std::string label;
    std::string pattern;  // empty: no predicate
    std::vector<double> cpu_per_mib;
    long stalled = 0;  // rounds that made no run in the window
};

// Escapes `text` for a TOML basic string.
std::string toml_string(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
        }
        out.push_back(c);
    }
    return out + "\"";
}

std::optional<std::pair<long, double>> sample(Pkitd& pkitd, Client& client) {
    if (!client.connected() && !pkitd.connect(client, 5.0)) {
        return std::nullopt;
    }
    json services =
        services_of(client.request_json(R"({"id":1,"cmd":"status","services":["flood"]})", 5.0));
    if (services.empty()) {
        return std::nullopt;
    }
    return std::pair{services[0].value("run", 0L), cpu_seconds(pkitd.pid())};
}

// pkitd CPU seconds per run (1 MiB) over `seconds`, or NaN.
double round_of(const std::string& binary, const std::string& pattern, double seconds) {
    TempDir dir("pkit-bench-match");
    std::string toml =
        "command = [\"/bin/sh\", \"-c\", \"head -c 1048576 /dev/zero | tr '\\\\0' x | "
        "fold -w 99\"]\n[restart]\npolicy = \"always\"\nbackoff_initial = \"0s\"\n"
        "jitter = false\n[output]\nforward = \"none\"\n";
    if (!pattern.empty()) {
        toml += "[stop_when]\noutput_matches = " + toml_string(pattern) + "\n";
    }
    dir.write("services/flood.toml", toml);
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        return NAN;
    }
    // Past the first run, then the window.
    double until = mono_seconds() + 30.0;
    std::optional<std::pair<long, double>> first;
    while (mono_seconds() < until && (!first || first->first < 2)) {
        first = sample(pkitd, client);
        sleep_seconds(0.05);
    }
    if (!first || first->first < 2) {
        return NAN;
    }
    sleep_seconds(seconds);
    auto last = sample(pkitd, client);
    if (!last || last->first <= first->first) {
        return NAN;
    }
    return (last->second - first->second) / static_cast<double>(last->first - first->first);
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    double seconds = arg_number(argc, argv, "--seconds", 5);
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 3));
    std::string own = arg(argc, argv, "--pattern", "");
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_match --pkitd PATH [--seconds S] [--rounds N] [--pattern RE]\n");
        return 2;
    }
    std::vector<Variant> variants{
        {"no predicate", "", {}, 0},
        {"output_matches, realistic", "(ERROR|FATAL).*(timeout|refused)", {}, 0},
        {"output_matches \"x*y\"", "x*y", {}, 0}};
    if (!own.empty()) {
        variants.push_back({"output_matches \"" + own + "\"", own, {}, 0});
    }
    for (int r = 0; r < rounds; ++r) {
        for (auto& v : variants) {
            double cpu = round_of(binary, v.pattern, seconds);
            if (std::isnan(cpu)) {
                ++v.stalled;
            } else {
                v.cpu_per_mib.push_back(cpu);
            }
        }
    }
    print_header("pkitd CPU per MiB of service output, 99-byte lines (" + std::to_string(rounds) +
                 " rounds of " + format_number(seconds, 0) + " s)");
    double base = median(variants[0].cpu_per_mib);
    for (const auto& v : variants) {
        double ms = median(v.cpu_per_mib) * 1e3;
        std::string extra = v.stalled > 0 ? std::to_string(v.stalled) + " rounds: no run" : "";
        if (v.cpu_per_mib.empty()) {
            print_row(v.label, "timeout", "ms/MiB", "", "", extra);
            continue;
        }
        std::string diff = &v == &variants[0]
                               ? "(base)"
                               : "+" + format_number(ms - base * 1e3, 2) +
                                     " ms = " + format_number(ms / (base * 1e3), 2) + "x";
        print_row(v.label, format_number(ms, 2), "ms/MiB", "", diff, extra);
    }
    return 0;
}
