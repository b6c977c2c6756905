// Wakeups while idle: pkitd with N `sleep 1000` services, once they all run, should
// sleep in its event loop and wake for nothing. Counts the context switches of every
// pkitd thread over a window (each wakeup ends in one when pkitd blocks again), first
// with no client at all, then with one `events` subscriber connected, and optionally
// lists the syscalls made in a further window with `strace -c -f`.
//
//   bench_idle --pkitd PATH [--services 50] [--seconds 10] [--strace 1]

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

// `strace -c -f -p PID` over `seconds`; the summary's lines, or a note why none.
std::string strace_summary(pid_t pid, double seconds, const std::string& out_path) {
    if (::access("/usr/bin/strace", X_OK) != 0) {
        return "strace not installed";
    }
    std::string target = std::to_string(pid);
    std::string log_path = out_path + ".log";
    pid_t tracer = ::fork();
    if (tracer == 0) {
        int null_fd = ::open("/dev/null", O_WRONLY);
        int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(null_fd, 1);
        ::dup2(log_fd, 2);
        ::execl("/usr/bin/strace", "strace", "-c", "-f", "-o", out_path.c_str(), "-p",
                target.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    sleep_seconds(seconds);
    ::kill(tracer, SIGINT);
    int status = 0;
    ::waitpid(tracer, &status, 0);
    std::string text = read_text(out_path);
    if (!text.empty()) {
        return text;
    }
    // strace -c writes no table at all when it saw no syscall.
    return read_text(log_path).find("attached") != std::string::npos
               ? "strace attached and saw no syscall at all"
               : "strace could not attach: " + read_text(log_path);
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    auto services = static_cast<std::size_t>(arg_number(argc, argv, "--services", 50));
    double seconds = arg_number(argc, argv, "--seconds", 10.0);
    bool use_strace = arg_number(argc, argv, "--strace", 1) != 0;
    if (binary.empty()) {
        std::fprintf(stderr, "usage: bench_idle --pkitd PATH [--services N] [--seconds S]\n");
        return 2;
    }

    TempDir dir("pkit-bench-idle");
    for (std::size_t i = 0; i < services; ++i) {
        dir.write("services/" + service_name(i) + ".toml",
                  "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    Pkitd pkitd(binary, dir.path());
    Client client;
    print_header("idle wakeups (" + std::to_string(services) + " `sleep 1000` services, " +
                 format_number(seconds, 0) + " s windows)");
    if (!pkitd.start() || !pkitd.connect(client) || !wait_running(pkitd, client, services, 30.0)) {
        print_row("pkitd idle", "n/a", "wakeups", "0", "-", "no figure: services did not run");
        return 0;
    }
    client.close();
    sleep_seconds(1.0);  // let the last replies and exits settle

    long alone = wakeups_over(pkitd.pid(), seconds);
    print_row("pkitd idle, no client", std::to_string(alone), "wakeups", "0",
              format_number(alone / seconds, 2) + "/s", alone == 0 ? "meets" : "misses");

    Client events;
    if (pkitd.connect(events) && events.request(R"({"id":1,"cmd":"events"})")) {
        sleep_seconds(0.5);
        long subscribed = wakeups_over(pkitd.pid(), seconds);
        print_row("pkitd idle, one `events` subscriber", std::to_string(subscribed), "wakeups", "0",
                  format_number(subscribed / seconds, 2) + "/s",
                  subscribed == 0 ? "meets" : "misses");
    }
    Switches s = read_switches(pkitd.pid());
    print_note("pkitd has " + std::to_string(s.threads) + " thread(s)");

    if (use_strace) {
        double window = std::min(seconds, 5.0);
        std::string summary = strace_summary(pkitd.pid(), window, dir.file("strace.txt"));
        print_note("strace -c -f over " + format_number(window, 0) + " s:");
        std::istringstream lines(summary);
        for (std::string line; std::getline(lines, line);) {
            print_note("  " + line);
        }
    }
    return 0;
}
