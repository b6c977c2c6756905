#pragma once
// A child that vets the binary of an upgrade in place (SPEC §16): `BINARY
// --upgrade-check`, then its trial on the very state it would be handed. It runs in a
// process group of its own, stdin /dev/null, stdout and stderr into one pipe (the first
// k_output_max bytes are kept), and, for the trial, the state's memory file as its
// descriptor 3. Past its time limit its whole group is killed. pkitd's reaper hands its
// exit to on_child(), which reads what it wrote; the outcome is reported at the loop's
// next turn, out of the reaper's batch, where the daemon may pump.

#include <sys/types.h>
#include <uv.h>

#include <chrono>
#include <expected>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell::upgrade {

class CheckChild {
public:
    static constexpr std::size_t k_output_max = 4096;

    struct Outcome {
        int wait_status = 0;
        bool timed_out = false;  // killed at the time limit
        std::string output;      // stdout and stderr, as they came, up to k_output_max
        // "exited 1", "was killed by SIGSEGV", "did not finish within 5 s"; empty for a
        // clean exit 0.
        std::string failure(std::chrono::milliseconds limit) const;
    };
    using Done = std::function<void(Outcome)>;

    explicit CheckChild(uv_loop_t* loop) : m_timeout(loop), m_report(loop, [this] { report(); }) {}
    // A child still running is killed (its group) and left to the reaper.
    ~CheckChild();
    CheckChild(const CheckChild&) = delete;
    CheckChild& operator=(const CheckChild&) = delete;

    // Starts `argv` (argv[0] the binary's absolute path) with pkitd's environment;
    // `state_fd` >= 0 becomes its descriptor 3. `done` is called once, at the turn after
    // its exit.
    // Returns why it could not start. One child at a time.
    std::expected<void, std::string> start(const std::vector<std::string>& argv, int state_fd,
                                           std::chrono::milliseconds limit, Done done);
    // The reaper's exit of `pid`: true when it was this child's (`done` comes next turn).
    bool on_child(pid_t pid, int wait_status);
    bool running() const { return m_pid != 0; }
    std::chrono::milliseconds limit() const { return m_limit; }

private:
    void close_pipe();
    void report();

    Timer m_timeout;
    NextTurn m_report;
    Outcome m_outcome;
    pid_t m_pid = 0;
    int m_out = -1;
    bool m_timed_out = false;
    std::chrono::milliseconds m_limit{0};
    Done m_done;
};

// What `BINARY --upgrade-check` printed: the pkitd it is ("pkitd VERSION") and the state
// formats it reads ("state-format 1 2 3").
struct CheckAnswer {
    std::string version;
    std::vector<int> formats;
};
CheckAnswer parse_check_answer(std::string_view output);

// The newest state format both this pkitd writes (`oldest` to `newest`) and the other
// one reads; 0 when there is none.
int common_format(const CheckAnswer& answer, int oldest, int newest);

// A child's output for a message: its lines, trimmed, joined with "; ", at most
// `max_bytes` (cut with "...").
std::string output_words(std::string_view output, std::size_t max_bytes = 1000);

}  // namespace pkit::shell::upgrade
