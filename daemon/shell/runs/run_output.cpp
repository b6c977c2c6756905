#include "daemon/shell/runs/run_output.hpp"

#include <algorithm>
#include <type_traits>

namespace pkit::shell {

RunOutput::RunOutput(uv_loop_t* loop, const core::Supervisor& supervisor, Line line, Ended ended,
                     Log log)
    : m_loop(loop),
      m_supervisor(supervisor),
      m_line(std::move(line)),
      m_ended(std::move(ended)),
      m_log(std::move(log)),
      m_pipes(supervisor.size()) {}

std::vector<std::unique_ptr<RunOutput::RunPipes>>& RunOutput::pipes_of(std::size_t service) {
    if (service >= m_pipes.size()) {
        m_pipes.resize(std::max(service + 1, m_supervisor.size()));  // a reload added some
    }
    return m_pipes[service];
}

void RunOutput::attach(std::size_t service, std::uint64_t run, int stdout_fd, int stderr_fd) {
    auto& pipes =
        pipes_of(service).emplace_back(std::make_unique<RunPipes>(RunPipes{this, service, run}));
    attach_stream(*pipes, stdout_fd, core::Stream::stdout_);
    attach_stream(*pipes, stderr_fd, core::Stream::stderr_);
}

void RunOutput::attach_stream(RunPipes& pipes, int fd, core::Stream stream) {
    auto& slot = stream == core::Stream::stdout_ ? pipes.out : pipes.err;
    // Two pointers' worth of trivially copyable captures: std::function keeps them in
    // its own buffer, so a run's readers cost no allocation for their callbacks (with a
    // thousand services, four fewer allocations each).
    RunPipes* entry = &pipes;
    auto on_line = [entry, stream](std::string_view line) {
        entry->owner->m_line(entry->service, entry->run, stream, line);
    };
    auto on_eof = [entry, reader = &slot] {
        // Closing the reader inside its own callback is allowed; the entry itself is
        // swept later, outside any callback of its readers.
        entry->owner->m_to_sweep.push_back(entry->service);
        reader->close();
        if (entry->done()) {
            entry->owner->m_ended(entry->service, entry->run);
        }
    };
    static_assert(sizeof(on_line) <= 2 * sizeof(void*) &&
                  std::is_trivially_copyable_v<decltype(on_line)>);
    static_assert(sizeof(on_eof) <= 2 * sizeof(void*) &&
                  std::is_trivially_copyable_v<decltype(on_eof)>);
    slot = LineReader(m_loop, on_line, on_eof);
    if (auto started = slot.start(fd); !started) {
        slot.close();
        m_log("warning", "cannot read the output of " + m_supervisor.service(pipes.service).name() +
                             ": " + uv_strerror(started.error()));
    }
}

bool RunOutput::on_child_exit(ChildExit& exit) {
    if (exit.service) {
        // Everything the run wrote before it exited is in its pipes now: read it, so
        // that output_matches sees the run's last lines.
        for (auto& pipes : pipes_of(*exit.service)) {
            pipes->out.drain();
            pipes->err.drain();
        }
        sweep(*exit.service);
    }
    return false;
}

void RunOutput::sweep(std::size_t service) {
    std::erase_if(pipes_of(service), [](const auto& p) { return p->done(); });
}

void RunOutput::sweep() {
    for (std::size_t service : m_to_sweep) {
        sweep(service);
    }
    m_to_sweep.clear();
}

bool RunOutput::holds(std::size_t service) const {
    return service < m_pipes.size() && !m_pipes[service].empty();
}

void RunOutput::hand_over(std::size_t service, upgrade::DaemonFacts& facts,
                          std::vector<int>& kept) const {
    if (service >= m_pipes.size()) {
        return;
    }
    const std::string& name = m_supervisor.service(service).name();
    auto keep = [&](upgrade::KeptFd fd) {
        kept.push_back(fd.fd);
        facts.fds.push_back(std::move(fd));
    };
    for (const auto& pipes : m_pipes[service]) {
        if (pipes->out.open() && pipes->out.fd() >= 0) {
            keep({"stdout", pipes->out.fd(), name, pipes->run, pipes->out.pending(), ""});
        }
        if (pipes->err.open() && pipes->err.fd() >= 0) {
            keep({"stderr", pipes->err.fd(), name, pipes->run, pipes->err.pending(), ""});
        }
    }
}

RunOutput::RunPipes& RunOutput::pipes_of_run(std::size_t service, std::uint64_t run) {
    auto& list = pipes_of(service);
    RunPipes* pipes = nullptr;
    for (auto& p : list) {
        if (p->run == run) {
            pipes = p.get();
        }
    }
    if (pipes == nullptr) {
        pipes = list.emplace_back(std::make_unique<RunPipes>(RunPipes{this, service, run})).get();
    }
    return *pipes;
}

void RunOutput::adopt(std::size_t service, const upgrade::KeptFd& kept) {
    RunPipes& pipes = pipes_of_run(service, kept.run);
    core::Stream stream = kept.role == "stdout" ? core::Stream::stdout_ : core::Stream::stderr_;
    attach_stream(pipes, kept.fd, stream);
    (stream == core::Stream::stdout_ ? pipes.out : pipes.err).restore_pending(kept.pending);
}

}  // namespace pkit::shell
