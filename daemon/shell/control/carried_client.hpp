#pragma once
// A client connection carried across an upgrade in place (SPEC §16): the old pkitd
// leaves its descriptor open through the exec and hands over, in the state, what the
// connection held and what its request waits for; the new pkitd takes it over and
// answers as the old one would have. Streaming connections (`events`, `logs -f`) are
// not carried: they end at the exec.

#include <cstdint>
#include <string>
#include <vector>

namespace pkit::shell {

// What the control server knows of a connection.
struct CarriedConnection {
    int fd = -1;
    bool served = true;      // authorised; false: refused, its answer being written
    bool finishing = false;  // its last reply given: written, then pkitd's side shut down
    bool eof = false;        // the client shut down its writing side
    std::string input;       // bytes received and not handed to the handler yet
    std::string output;      // replies queued and not written yet (a partial write's rest first)
    std::string request;     // the line of the request awaiting its reply; empty: none

    bool operator==(const CarriedConnection&) const = default;
};

// What the request in flight waits for, as the request handler knows it.
enum class CarriedWait {
    none,     // no request in flight
    again,    // a read whose answer was coming on a later turn: handled afresh
    command,  // start, stop, restart: answered once those runs have ended or started
    wait,     // wait: answered once the condition is decided or its deadline passed
    upgrade,  // the upgrade itself: the new pkitd answers it
};

struct CarriedClient {
    CarriedConnection connection;
    CarriedWait waiting = CarriedWait::none;
    // command, wait: the services the request resolved to, by name, and for each the
    // run it had when the request came (command) or its episodes ended then (wait).
    std::vector<std::string> services;
    std::vector<std::uint64_t> marks;
    // wait: its deadline, in nanoseconds from the hand-over.
    std::int64_t deadline_ns = 0;

    bool operator==(const CarriedClient&) const = default;
};

}  // namespace pkit::shell
