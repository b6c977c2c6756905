// LogFiles: the queues on the loop's side, and the writer thread on the other.

#include "daemon/shell/logfile/log_files.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "daemon/shell/logfile/log_file_writer.hpp"

namespace pkit::shell {
namespace {

// A queued line: this header, then its text.
struct RecordHeader {
    double at;
    std::uint64_t run;
    std::uint32_t length;
    std::uint32_t stream;
};
static_assert(sizeof(RecordHeader) == 24);

// A queue past this many bytes wakes the writer at once rather than at the turn's end.
constexpr std::size_t k_wake_bytes = 256 * 1024;

std::string errno_text(int error) {
    char buffer[256];
    return ::strerror_r(error, buffer, sizeof buffer);  // GNU: returns the text
}

double wall_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct LogFiles::Shared {
    struct Slot {
        // The loop's and the writer's, under `mutex`.
        std::string service;
        std::string queue;
        std::uint64_t queue_drops = 0;
        bool dropping = false;  // dropped since the writer last took the queue
        bool listed = false;    // in `ready`
        bool rotate_asked = false;
        bool reopen_asked = false;
        bool removed = false;
        std::optional<config::LogFileSpec> new_spec;
        std::string path;
        // The writer's alone.
        std::unique_ptr<LogFileWriter> writer;
        std::string taken;
        // Read by stats() at any time.
        std::atomic<std::uint64_t> size{0};
        std::atomic<std::uint64_t> rotations{0};
        std::atomic<std::uint64_t> dropped{0};
        std::atomic<std::uint64_t> bytes{0};
    };

    explicit Shared(std::shared_ptr<LogDisk> d) : disk(std::move(d)) {}

    std::shared_ptr<LogDisk> disk;
    mutable std::mutex mutex;
    std::condition_variable wake;     // the writer waits on it
    std::condition_variable written;  // flush() and the destructor wait on it
    std::vector<std::unique_ptr<Slot>> slots;
    std::vector<Id> ready;
    std::vector<Id> failing;  // the writer's: files with a retry to make
    std::size_t total = 0;
    bool busy = false;
    bool stop = false;
    bool exited = false;
    std::vector<Report> reports;
    uv_async_t* async = nullptr;  // cleared when LogFiles goes

    void run();
    void post(Report report) {
        reports.push_back(std::move(report));
        if (async != nullptr) {
            uv_async_send(async);
        }
    }
    void account(Id id, Slot& slot, const LogFileWriter::Outcome& out, const std::string& path);
};

void LogFiles::Shared::account(Id id, Slot& slot, const LogFileWriter::Outcome& out,
                               const std::string& path) {
    slot.bytes += out.bytes;
    slot.dropped += out.dropped;
    slot.rotations += out.rotations;
    slot.size = slot.writer->size();
    if (out.failed != 0) {
        post(Report{Report::Kind::failed, id, slot.service, out.failed_path, out.failed, 0});
    }
    if (out.recovered_episode) {
        post(Report{Report::Kind::recovered, id, slot.service, path, 0, out.recovered});
    }
}

void LogFiles::Shared::run() {
    std::vector<LogRecord> records;
    std::unique_lock lock(mutex);
    for (;;) {
        if (ready.empty() && !stop) {
            // Sleep until lines come, or the first failing file's retry is due.
            std::optional<LogFileWriter::Clock::time_point> due;
            for (Id id : failing) {
                Slot* slot = slots[id].get();
                if (slot != nullptr && slot->writer && slot->writer->failing() &&
                    slot->writer->unreported() > 0) {
                    auto next = slot->writer->next_try();
                    due = due ? std::min(*due, next) : next;
                }
            }
            if (due) {
                wake.wait_until(lock, *due);
            } else {
                wake.wait(lock);
            }
        }
        std::vector<Id> batch;
        batch.swap(ready);
        for (Id id : batch) {
            Slot& slot = *slots[id];
            slot.taken.clear();
            slot.taken.swap(slot.queue);
            total -= slot.taken.size();
            slot.listed = false;
            slot.dropping = false;
        }
        busy = true;
        lock.unlock();

        auto now = LogFileWriter::Clock::now();
        double wall = wall_now();
        for (Id id : batch) {
            Slot& slot = *slots[id];
            // The flags and counts are read under the lock again: cheap, and the loop may
            // have set them since the queue was taken.
            lock.lock();
            std::uint64_t drops = std::exchange(slot.queue_drops, 0);
            std::optional<config::LogFileSpec> spec = std::exchange(slot.new_spec, std::nullopt);
            bool reopen = std::exchange(slot.reopen_asked, false);
            bool rotate = std::exchange(slot.rotate_asked, false);
            bool removed = slot.removed;
            lock.unlock();
            if (spec) {
                slot.writer->reconfigure(*spec);
            } else if (reopen) {
                slot.writer->reopen();
            }
            records.clear();
            for (std::size_t at = 0; at + sizeof(RecordHeader) <= slot.taken.size();) {
                RecordHeader header{};
                std::memcpy(&header, slot.taken.data() + at, sizeof header);
                at += sizeof header;
                records.push_back(LogRecord{
                    .stream = header.stream == 0 ? core::Stream::stdout_ : core::Stream::stderr_,
                    .at = header.at,
                    .run = header.run,
                    .text = std::string_view(slot.taken).substr(at, header.length)});
                at += header.length;
            }
            LogFileWriter::Outcome out;
            if (!records.empty() || drops > 0) {
                out = slot.writer->write(records, now, wall, drops);
                slot.dropped += drops;
            }
            LogFileWriter::Outcome rotated;
            if (rotate) {
                rotated = slot.writer->rotate(now);
            }
            if (slot.taken.capacity() > k_file_queue) {
                slot.taken = std::string();  // a burst's buffer is not kept for a quiet file
            }
            lock.lock();
            account(id, slot, out, slot.writer->spec().path);
            account(id, slot, rotated, slot.writer->spec().path);
            slot.path = slot.writer->spec().path;
            if (slot.writer->failing() &&
                std::find(failing.begin(), failing.end(), id) == failing.end()) {
                failing.push_back(id);
            }
            if (removed && !slot.listed) {
                slots[id].reset();
            }
            lock.unlock();
        }
        // Retries of failing files whose lines stopped coming: the notice goes in as
        // soon as the file can take it.
        for (std::size_t i = 0; i < failing.size(); ++i) {
            Slot* slot = slots[failing[i]].get();
            if (slot == nullptr || !slot->writer) {
                continue;
            }
            LogFileWriter::Outcome out = slot->writer->retry(now, wall);
            lock.lock();
            account(failing[i], *slot, out, slot->writer->spec().path);
            lock.unlock();
        }
        lock.lock();
        std::erase_if(failing,
                      [&](Id id) { return slots[id] == nullptr || !slots[id]->writer->failing(); });
        busy = false;
        written.notify_all();
        if (stop && ready.empty()) {
            break;
        }
    }
    // The files close with their writers, here on the writer thread.
    for (auto& slot : slots) {
        slot.reset();
    }
    exited = true;
    written.notify_all();
}

std::string LogFiles::Report::text() const {
    std::string head = service + ": log file " + path + ": ";
    switch (kind) {
        case Kind::failed:
            return head + errno_text(error) + "; lines are dropped";
        case Kind::queue_full:
            return head + "the writer is behind (a slow or stalled disk); lines are dropped";
        case Kind::recovered:
            return head + "writing again; " + std::to_string(dropped) + " lines were dropped";
    }
    return head;
}

LogFiles::LogFiles(uv_loop_t* loop, ReportCallback on_report, std::shared_ptr<LogDisk> disk)
    : m_shared(std::make_shared<Shared>(std::move(disk))),
      m_on_report(std::move(on_report)),
      m_async(this),
      m_wake(loop, [this] { m_shared->wake.notify_one(); }) {
    m_async.init(uv_async_init, loop, &LogFiles::on_async);
    m_shared->async = m_async.get();
    std::thread([shared = m_shared] { shared->run(); }).detach();
}

LogFiles::~LogFiles() {
    (void)flush(std::chrono::seconds(2));
    std::unique_lock lock(m_shared->mutex);
    m_shared->async = nullptr;
    m_shared->stop = true;
    m_shared->wake.notify_one();
    // The thread holds the shared state; one stuck in a stalled disk is left to it.
    m_shared->written.wait_for(lock, std::chrono::seconds(1), [&] { return m_shared->exited; });
}

LogFiles::Id LogFiles::add(std::string service, config::LogFileSpec spec) {
    auto slot = std::make_unique<Shared::Slot>();
    slot->service = service;
    slot->path = spec.path;
    slot->writer =
        std::make_unique<LogFileWriter>(*m_shared->disk, std::move(spec), std::move(service));
    std::lock_guard lock(m_shared->mutex);
    m_shared->slots.push_back(std::move(slot));
    return m_shared->slots.size() - 1;
}

void LogFiles::remove(Id id) {
    std::lock_guard lock(m_shared->mutex);
    Shared::Slot& slot = *m_shared->slots.at(id);
    slot.removed = true;
    if (!slot.listed) {
        slot.listed = true;
        m_shared->ready.push_back(id);
    }
    m_wake.schedule();
}

void LogFiles::reconfigure(Id id, config::LogFileSpec spec) {
    std::lock_guard lock(m_shared->mutex);
    Shared::Slot& slot = *m_shared->slots.at(id);
    slot.new_spec = std::move(spec);
    if (!slot.listed) {
        slot.listed = true;
        m_shared->ready.push_back(id);
    }
    m_wake.schedule();
}

void LogFiles::append(Id id, core::Stream stream, double at, std::uint64_t run,
                      std::string_view text) {
    std::size_t need = sizeof(RecordHeader) + text.size();
    bool wake_now = false;
    {
        std::lock_guard lock(m_shared->mutex);
        Shared& shared = *m_shared;
        Shared::Slot& slot = *shared.slots.at(id);
        if (slot.dropping || slot.queue.size() + need > k_file_queue ||
            shared.total + need > k_total_queue) {
            ++slot.queue_drops;
            if (!slot.dropping) {
                slot.dropping = true;
                shared.post(Report{Report::Kind::queue_full, id, slot.service, slot.path, 0, 0});
            }
        } else {
            RecordHeader header{.at = at,
                                .run = run,
                                .length = static_cast<std::uint32_t>(text.size()),
                                .stream = stream == core::Stream::stdout_ ? 0u : 1u};
            slot.queue.append(reinterpret_cast<const char*>(&header), sizeof header);
            slot.queue.append(text);
            shared.total += need;
            wake_now = slot.queue.size() >= k_wake_bytes;
        }
        if (!slot.listed) {
            slot.listed = true;
            shared.ready.push_back(id);
        }
    }
    if (wake_now) {
        m_shared->wake.notify_one();
    } else {
        m_wake.schedule();
    }
}

void LogFiles::rotate(Id id) {
    std::lock_guard lock(m_shared->mutex);
    Shared::Slot& slot = *m_shared->slots.at(id);
    slot.rotate_asked = true;
    if (!slot.listed) {
        slot.listed = true;
        m_shared->ready.push_back(id);
    }
    m_wake.schedule();
}

void LogFiles::reopen_all() {
    std::lock_guard lock(m_shared->mutex);
    for (Id id = 0; id < m_shared->slots.size(); ++id) {
        Shared::Slot* slot = m_shared->slots[id].get();
        if (slot == nullptr || slot->removed) {
            continue;
        }
        slot->reopen_asked = true;
        if (!slot->listed) {
            slot->listed = true;
            m_shared->ready.push_back(id);
        }
    }
    m_wake.schedule();
}

LogFiles::Stats LogFiles::stats(Id id) const {
    std::lock_guard lock(m_shared->mutex);
    const Shared::Slot& slot = *m_shared->slots.at(id);
    return Stats{slot.path, slot.size, slot.rotations, slot.dropped + slot.queue_drops, slot.bytes};
}

bool LogFiles::flush(std::chrono::milliseconds limit) {
    std::unique_lock lock(m_shared->mutex);
    m_shared->wake.notify_one();
    return m_shared->written.wait_for(lock, limit, [&] {
        return m_shared->exited || (m_shared->ready.empty() && !m_shared->busy);
    });
}

std::size_t LogFiles::queued_bytes() const {
    std::lock_guard lock(m_shared->mutex);
    return m_shared->total;
}

void LogFiles::on_async(uv_async_t* handle) {
    if (auto* self = static_cast<LogFiles*>(handle->data)) {
        self->deliver_reports();
    }
}

void LogFiles::deliver_reports() {
    std::vector<Report> reports;
    {
        std::lock_guard lock(m_shared->mutex);
        reports.swap(m_shared->reports);
    }
    for (const Report& report : reports) {
        if (m_on_report) {
            m_on_report(report);
        }
    }
}

}  // namespace pkit::shell
