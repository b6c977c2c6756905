#include "ctl/logs_follow.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "ctl/common.hpp"

namespace pkit::ctl {
namespace {

// Prints the marker when `run` is newer than the run shown (at its `started` event or
// its first line, whichever pkitd sent first).
void enter_run(Follower& f, const FollowFormat& format, int run) {
    if (f.shown_run && run <= *f.shown_run) {
        return;
    }
    if (f.shown_run && !format.json) {
        std::string marker = "--- run " + std::to_string(run);
        if (f.restart) {
            marker += " (restart " + std::to_string(*f.restart) + ")";
        }
        marker += " ---";
        if (format.several) {
            std::string name = f.name;
            name.resize(std::max(name.size(), format.line.name_width), ' ');
            marker = name + " | " + marker;
        }
        std::cout << marker << "\n";
    }
    f.shown_run = run;
    f.restart.reset();
}

// One line or event of a follower's stream.
void handle(Follower& f, const FollowFormat& format, proto::Reply& next) {
    proto::json& body = next.body;
    if (next.kind == proto::Reply::Kind::line) {
        if (body.contains("run") && body["run"].is_number_integer()) {
            enter_run(f, format, body["run"].get<int>());
        }
        if (!format.stream.empty() && body.value("stream", "") != format.stream) {
            return;
        }
        if (format.json) {
            if (format.several) {
                body["service"] = f.name;
            }
            print_json(body);
        } else {
            std::cout << line_text(f.name, body, format.line) << "\n";
        }
    } else if (next.kind == proto::Reply::Kind::event) {
        const std::string type = body.value("type", "");
        if (format.json) {
            print_json(body);
        }
        if (type == "restarting") {
            f.restart = body.value("restart", 0);
        } else if (type == "started") {
            enter_run(f, format, body.value("run", 0));
        } else if (type == "stopped" || type == "gave_up" || type == "restarts_exhausted") {
            f.done = true;  // supervision ended: the service will not run again by itself
        }
    }
}

// Reads one reply of `f` (its socket is readable or a line is buffered).
void read_one(Follower& f, const FollowFormat& format) {
    auto next = f.client->read(std::chrono::steady_clock::now() + std::chrono::seconds(10));
    if (!next) {
        f.done = true;  // pkitd closed the stream (it is shutting down), or interrupted
        return;
    }
    handle(f, format, *next);
}

}  // namespace

void follow(std::vector<Follower>& followers, const FollowFormat& format) {
    while (!interrupted()) {
        std::vector<pollfd> watched;
        std::vector<Follower*> owners;
        for (auto& f : followers) {
            // Lines already buffered first: poll() would not report them.
            while (!f.done && f.client->has_line()) {
                read_one(f, format);
            }
            if (!f.done) {
                watched.push_back({f.client->fd(), POLLIN, 0});
                owners.push_back(&f);
            }
        }
        std::cout << std::flush;
        if (watched.empty()) {
            return;
        }
        if (::poll(watched.data(), watched.size(), -1) < 0) {
            if (errno == EINTR) {
                continue;  // SIGINT or SIGTERM: interrupted() ends the loop
            }
            throw CtlError(k_exit_unreachable, std::string("poll: ") + std::strerror(errno));
        }
        for (std::size_t i = 0; i < watched.size(); ++i) {
            if (watched[i].revents != 0 && !owners[i]->done) {
                read_one(*owners[i], format);
            }
        }
    }
}

}  // namespace pkit::ctl
