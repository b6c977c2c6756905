// Ping round trips per second on one connection: sequential (send, wait for the reply,
// send the next) and pipelined (batches of `--window` requests in one write, then their
// replies). pkitd answers requests of a connection in order, so both are legal clients.
//
//   bench_ping --pkitd PATH [--seconds 2] [--rounds 5] [--window 32]

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

const std::string k_ping = R"({"id":1,"cmd":"ping"})";

// Replies per second over `seconds`, `window` requests in flight per batch.
double ping_rate(Client& client, double seconds, int window) {
    std::string batch;
    for (int i = 0; i < window; ++i) {
        batch += k_ping + "\n";
    }
    std::size_t replies = 0;
    std::string line;
    double begin = mono_seconds();
    double elapsed = 0.0;
    while ((elapsed = mono_seconds() - begin) < seconds) {
        if (!client.send(batch)) {
            return NAN;
        }
        for (int i = 0; i < window; ++i) {
            if (!client.read_line(line)) {
                return NAN;
            }
            ++replies;
        }
    }
    return static_cast<double>(replies) / elapsed;
}

void rate_row(const std::string& what, const std::vector<double>& rates) {
    if (rates.empty()) {
        print_row(what, "n/a", "pings/s", ">= 20000/s", "-", "no figure");
        return;
    }
    double rate = median(rates);
    print_row(what, format_number(rate, 0), "pings/s", ">= 20000/s",
              format_number(rate / 20000.0, 2) + "x goal", rate >= 20000.0 ? "meets" : "misses");
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    double seconds = arg_number(argc, argv, "--seconds", 2.0);
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 5));
    int window = static_cast<int>(arg_number(argc, argv, "--window", 32));
    if (binary.empty()) {
        std::fprintf(stderr, "usage: bench_ping --pkitd PATH [--seconds S] [--rounds N]\n");
        return 2;
    }

    TempDir dir("pkit-bench-ping");
    dir.write("services/idle.toml", "command = [\"/bin/sleep\", \"1000\"]\n");
    Pkitd pkitd(binary, dir.path());
    Client client;
    print_header("ping on one connection (" + std::to_string(rounds) + " rounds of " +
                 format_number(seconds, 1) + " s)");
    if (!pkitd.start() || !pkitd.connect(client) || !client.request(k_ping)) {
        print_row("ping", "n/a", "pings/s", ">= 20000/s", "-", "no figure: pkitd did not answer");
        return 0;
    }
    std::vector<double> sequential;
    std::vector<double> pipelined;
    for (int r = 0; r < rounds; ++r) {
        double s = ping_rate(client, seconds, 1);
        double p = ping_rate(client, seconds, window);
        if (!std::isnan(s)) {
            sequential.push_back(s);
        }
        if (!std::isnan(p)) {
            pipelined.push_back(p);
        }
    }
    rate_row("ping, sequential request/reply", sequential);
    rate_row("ping, pipelined " + std::to_string(window) + " in flight", pipelined);
    return 0;
}
