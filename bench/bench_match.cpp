// What `output_matches` costs: a service prints 1 MiB of output (10,486 lines of 99
// 'x') and exits, restarted at zero backoff; pkitd's CPU (utime + stime from
// /proc/PID/stat) per MiB, without a predicate and with `[stop_when] output_matches`
// set to a pattern that never matches. Rounds alternate between the variants so that
// all see the same machine load; medians are printed, with the difference.
//
// Patterns: "realistic" `(ERROR|FATAL).*(timeout|refused)`, and "x*y", which a
// backtracking matcher searches in time quadratic in the line's length (RE2 is linear);
// with --worst, the counted repetitions that cost most per line: "x{245}y" (the largest
// program pkit.toml(5) accepts, every NFA thread alive on a line of x), and the
// issue's "\w{1000}x" and "a{1000}b" (refused as too complex where that limit holds).
// --pattern adds one of your own. --line-bytes sets the line length (99; 16383 makes
// the longest line pkitd delivers whole).
//
// The loop's latency: while the service floods, a `ping` is timed every 10 ms on the
// control socket; its p99 and max are printed (the longest the loop was held).
//
//   bench_match --pkitd PATH [--seconds 5] [--rounds 3] [--pattern REGEX] [--worst]
//               [--line-bytes 99]

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

struct Variant {
    std::string label;
    std::string pattern;  // empty: no predicate
    std::vector<double> cpu_per_mib;
    long stalled = 0;           // rounds that made no run in the window
    std::vector<double> pings;  // seconds per ping round trip, every round
    bool refused = false;       // pkitd refused the configuration
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

// pkitd CPU seconds per run (1 MiB) over `seconds`, or NaN; ping round trips into
// `pings`.
double round_of(const std::string& binary, Variant& v, double seconds, long line_bytes) {
    const std::string& pattern = v.pattern;
    TempDir dir("pkit-bench-match");
    std::string toml =
        "command = [\"/bin/sh\", \"-c\", \"head -c 1048576 /dev/zero | tr '\\\\0' x | "
        "fold -w " +
        std::to_string(line_bytes) +
        "\"]\n[restart]\npolicy = \"always\"\nbackoff_initial = \"0s\"\n"
        "jitter = false\n[output]\nforward = \"none\"\n";
    if (!pattern.empty()) {
        toml += "[stop_when]\noutput_matches = " + toml_string(pattern) + "\n";
    }
    dir.write("services/flood.toml", toml);
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        v.refused = !pkitd.alive() && pkitd.exit_code() == 2;
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
    Client pinger;
    double window_end = mono_seconds() + seconds;
    while (mono_seconds() < window_end) {
        if (!pinger.connected() && !pkitd.connect(pinger, 5.0)) {
            break;
        }
        double asked = mono_seconds();
        json pong = pinger.request_json(R"({"id":1,"cmd":"ping"})", 5.0);
        v.pings.push_back(pong.is_object() ? mono_seconds() - asked : 5.0);
        sleep_seconds(0.01);
    }
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
    bool worst = std::find_if(argv + 1, argv + argc, [](const char* a) {
                     return std::string_view(a) == "--worst";
                 }) != argv + argc;
    auto line_bytes = static_cast<long>(arg_number(argc, argv, "--line-bytes", 99));
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_match --pkitd PATH [--seconds S] [--rounds N] [--pattern RE]\n");
        return 2;
    }
    std::vector<Variant> variants{
        {"no predicate", "", {}, 0},
        {"output_matches, realistic", "(ERROR|FATAL).*(timeout|refused)", {}, 0},
        {"output_matches \"x*y\"", "x*y", {}, 0}};
    if (worst) {
        for (const char* p : {"x{245}y", "\\w{1000}x", "a{1000}b"}) {
            variants.push_back({"output_matches \"" + std::string(p) + "\"", p, {}, 0});
        }
    }
    if (!own.empty()) {
        variants.push_back({"output_matches \"" + own + "\"", own, {}, 0});
    }
    for (int r = 0; r < rounds; ++r) {
        for (auto& v : variants) {
            double cpu = round_of(binary, v, seconds, line_bytes);
            if (std::isnan(cpu)) {
                ++v.stalled;
            } else {
                v.cpu_per_mib.push_back(cpu);
            }
        }
    }
    print_header("pkitd CPU per MiB of service output, " + std::to_string(line_bytes) +
                 "-byte lines (" + std::to_string(rounds) + " rounds of " +
                 format_number(seconds, 0) + " s)");
    double lines_per_mib = 1048576.0 / static_cast<double>(line_bytes + 1);
    double base = median(variants[0].cpu_per_mib);
    for (const auto& v : variants) {
        double ms = median(v.cpu_per_mib) * 1e3;
        std::string extra = v.stalled > 0 ? std::to_string(v.stalled) + " rounds: no run" : "";
        if (v.refused) {
            print_row(v.label, "refused", "", "", "pkitd --check: too complex", "");
            continue;
        }
        if (v.cpu_per_mib.empty()) {
            print_row(v.label, "timeout", "ms/MiB", "", "", extra);
            continue;
        }
        std::string diff = &v == &variants[0]
                               ? "(base)"
                               : "+" + format_number(ms - base * 1e3, 2) +
                                     " ms = " + format_number(ms / (base * 1e3), 2) + "x";
        print_row(v.label, format_number(ms, 2), "ms/MiB", "", diff, extra);
        print_row("  CPU per line", format_number(ms / lines_per_mib, 3), "ms", "", "", "");
        print_row("  ping while flooding p50 / p99 / max",
                  format_number(percentile(v.pings, 0.5) * 1e3, 1) + " / " +
                      format_number(percentile(v.pings, 0.99) * 1e3, 1) + " / " +
                      format_number(percentile(v.pings, 1.0) * 1e3, 1),
                  "ms", "", std::to_string(v.pings.size()) + " pings", "");
    }
    return 0;
}
