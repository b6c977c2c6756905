#pragma once
// RAII ownership of libuv handles.
//
// libuv owns a handle's memory until its close callback has run, so a handle can never
// be a plain member that dies with its owner: the loop may still touch it. UvHandle
// allocates the handle on the heap and, on destruction, hands it to uv_close with a
// callback that frees it. That makes destroying an owner safe anywhere, including from
// inside one of the handle's own callbacks. The loop must run once more after the last
// owner is gone for the memory to be released (tests: uv_run, then uv_loop_close).

#include <uv.h>

#include <cstdint>
#include <functional>
#include <utility>

namespace pkit::shell {

// One libuv handle of type T (uv_timer_t, uv_signal_t, uv_pipe_t, uv_tcp_t, uv_poll_t...).
// Not copyable or movable: libuv holds pointers to the handle, and callbacks find their
// owner through handle.data, which is fixed at construction.
template <typename T>
class UvHandle {
public:
    // `data` becomes handle.data, for callbacks to find their owner.
    explicit UvHandle(void* data) : m_handle(new T{}) { m_handle->data = data; }

    ~UvHandle() { reset(); }

    UvHandle(const UvHandle&) = delete;
    UvHandle& operator=(const UvHandle&) = delete;

    // Runs a libuv init function (uv_timer_init, uv_pipe_init...) on the handle:
    // init(loop, handle, args...). Returns its libuv status; only a handle whose init
    // succeeded is ever passed to uv_close. uv_*_init clears handle.data on some
    // versions, so it is restored afterwards.
    template <typename Init, typename... Args>
    int init(Init init_fn, uv_loop_t* loop, Args&&... args) {
        void* data = m_handle->data;
        int rc = init_fn(loop, m_handle, std::forward<Args>(args)...);
        m_handle->data = data;
        m_initialized = rc == 0;
        return rc;
    }

    T* get() const { return m_handle; }
    T* operator->() const { return m_handle; }
    uv_handle_t* as_handle() const { return reinterpret_cast<uv_handle_t*>(m_handle); }
    uv_stream_t* as_stream() const { return reinterpret_cast<uv_stream_t*>(m_handle); }
    bool initialized() const { return m_handle != nullptr && m_initialized; }

    // Closes the handle now (no callback of it runs afterwards) and gives up the memory
    // to the close callback. Idempotent.
    void reset() {
        if (m_handle == nullptr) {
            return;
        }
        T* handle = std::exchange(m_handle, nullptr);
        if (!m_initialized) {
            delete handle;
            return;
        }
        handle->data = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(handle),
                 [](uv_handle_t* closed) { delete reinterpret_cast<T*>(closed); });
    }

private:
    T* m_handle;
    bool m_initialized = false;
};

// A one-shot or repeating timer. The callback is a std::function: a lambda capturing a
// pointer or two fits its small-object buffer, so arming a timer does not allocate.
// Destroying the Timer cancels it, also from inside its own callback.
class Timer {
public:
    using Callback = std::function<void()>;

    // Returns a timer bound to `loop`; uv_timer_init cannot fail on Unix.
    explicit Timer(uv_loop_t* loop) : m_handle(this) { m_handle.init(uv_timer_init, loop); }

    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    // Arms the timer to call `callback` after `timeout_ms`, then every `repeat_ms` if that
    // is not 0. Re-arming replaces the previous deadline and callback.
    void start(std::uint64_t timeout_ms, Callback callback, std::uint64_t repeat_ms = 0) {
        m_callback = std::move(callback);
        uv_timer_start(m_handle.get(), &Timer::on_timer, timeout_ms, repeat_ms);
    }

    // Disarms the timer; its callback will not run until start() again.
    void stop() { uv_timer_stop(m_handle.get()); }

    bool active() const { return uv_is_active(m_handle.as_handle()) != 0; }

    // Lets the loop exit while this timer is the only thing armed (uv_unref).
    void unref() { uv_unref(m_handle.as_handle()); }

private:
    static void on_timer(uv_timer_t* handle) {
        auto* self = static_cast<Timer*>(handle->data);
        if (self == nullptr || !self->m_callback) {
            return;
        }
        // The callback may destroy the Timer, so it runs from a local copy; an
        // exception must not unwind into libuv.
        try {
            Callback callback = self->m_callback;
            callback();
        } catch (...) {
        }
    }

    UvHandle<uv_timer_t> m_handle;
    Callback m_callback;
};

// Work deferred to the loop's next turn: an idle handle that runs its callback once,
// then stops. Unlike a 0 ms timer it never runs again in the pass that armed it (libuv
// before 1.45 runs a timer re-armed at 0 ms from a timer callback again at once,
// before any I/O), and while armed the loop polls I/O without blocking, so signals,
// sockets and pipes are served between two runs of the callback.
class NextTurn {
public:
    using Callback = std::function<void()>;

    // Binds to `loop` and keeps `callback` for every schedule(); uv_idle_init cannot
    // fail on Unix.
    NextTurn(uv_loop_t* loop, Callback callback) : m_handle(this), m_callback(std::move(callback)) {
        m_handle.init(uv_idle_init, loop);
    }

    NextTurn(const NextTurn&) = delete;
    NextTurn& operator=(const NextTurn&) = delete;

    // Arms the callback for the next turn; a second call before it runs changes nothing.
    void schedule() {
        if (!pending()) {
            uv_idle_start(m_handle.get(), &NextTurn::on_idle);
        }
    }

    // Disarms it.
    void cancel() { uv_idle_stop(m_handle.get()); }

    bool pending() const { return uv_is_active(m_handle.as_handle()) != 0; }

private:
    static void on_idle(uv_idle_t* handle) {
        auto* self = static_cast<NextTurn*>(handle->data);
        if (self == nullptr) {
            return;
        }
        // Disarmed first, so that the callback may schedule the next turn again; it
        // may also destroy this NextTurn, hence the local copy. Never throws into libuv.
        uv_idle_stop(handle);
        try {
            Callback callback = self->m_callback;
            callback();
        } catch (...) {
        }
    }

    UvHandle<uv_idle_t> m_handle;
    Callback m_callback;
};

// Sets a flag for the lifetime of a scope (the reaping, the timer's callback).
class ScopedFlag {
public:
    explicit ScopedFlag(bool& flag) : m_flag(flag) { m_flag = true; }
    ~ScopedFlag() { m_flag = false; }
    ScopedFlag(const ScopedFlag&) = delete;
    ScopedFlag& operator=(const ScopedFlag&) = delete;

private:
    bool& m_flag;
};

}  // namespace pkit::shell
