#pragma once
// The owner of runs' output pipes (SPEC §10): each run's stdout and stderr read into
// lines (io/LineReader), the current run's and those of ended runs whose leftovers keep
// writing, until end of file. Each line goes to Line (the Daemon hands it to the core's
// tail, the forwarding and the followers); a run's exit first drains what it wrote,
// so the core sees its last lines before its end. An upgrade in place hands the pipes
// over with what was read and not delivered.
//
//   pipe ──▶ LineReader ──▶ RunOutput ──Line──▶ Daemon::on_line ──▶ Supervisor::on_output
//   both at EOF ──Ended──▶ Reaper::expect (the run ends as its pipes do)

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/child_exit.hpp"
#include "daemon/shell/io/line_reader.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace pkit::shell {

class RunOutput final : public ExitOwner {
public:
    using Line = std::function<void(std::size_t service, std::uint64_t run, core::Stream stream,
                                    std::string_view text)>;
    // Both pipes of `run` reached end of file.
    using Ended = std::function<void(std::size_t service, std::uint64_t run)>;
    using Log = std::function<void(std::string_view level, const std::string& message)>;

    RunOutput(uv_loop_t* loop, const core::Supervisor& supervisor, Line line, Ended ended, Log log);
    RunOutput(const RunOutput&) = delete;
    RunOutput& operator=(const RunOutput&) = delete;

    // Reads `run` of `service` from `stdout_fd` and `stderr_fd` (owned from now on).
    void attach(std::size_t service, std::uint64_t run, int stdout_fd, int stderr_fd);
    // Drains the pipes of the exited run's service (never claims the exit).
    bool on_child_exit(ChildExit& exit) override;
    // Forgets the pipes that reached end of file since the last sweep.
    void sweep();
    // Whether `service` still has a pipe open.
    bool holds(std::size_t service) const;
    // Every pipe closed (pkitd's end).
    void clear() { m_pipes.clear(); }

    // An upgrade in place: `service`'s open pipes, each with what its reader has not
    // delivered (what is still in the pipe stays there for the next pkitd), and the
    // next pkitd's side, taking one back.
    void hand_over(std::size_t service, upgrade::DaemonFacts& facts, std::vector<int>& kept) const;
    void adopt(std::size_t service, const upgrade::KeptFd& kept);

private:
    // The open pipes of one run. The readers' callbacks capture only a pointer to this
    // entry and a stream, which std::function holds without allocating.
    struct RunPipes {
        RunOutput* owner;
        std::size_t service;
        std::uint64_t run;
        LineReader out;
        LineReader err;
        bool done() const { return !out.open() && !err.open(); }
    };
    void attach_stream(RunPipes& pipes, int fd, core::Stream stream);
    RunPipes& pipes_of_run(std::size_t service, std::uint64_t run);
    // The open pipes of `service`'s runs (the table grows when a reload adds services).
    std::vector<std::unique_ptr<RunPipes>>& pipes_of(std::size_t service);
    void sweep(std::size_t service);

    uv_loop_t* m_loop;
    const core::Supervisor& m_supervisor;
    Line m_line;
    Ended m_ended;
    Log m_log;
    // Pipes of runs still open, per service; removed at end of file.
    std::vector<std::vector<std::unique_ptr<RunPipes>>> m_pipes;
    // Services with a pipe at end of file since the last sweep.
    std::vector<std::size_t> m_to_sweep;
};

}  // namespace pkit::shell
