// OutOfLine<T> (config/out_of_line.hpp) and the parts of ServiceSpec it holds: a
// part no file sets costs no allocation, and writing a part's defaults out is no
// change for reload (SPEC §8).

#include "tests/unit/config/config_doctest.hpp"

#include <utility>

#include "config/out_of_line.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using namespace std::chrono_literals;

namespace {

// Which of a spec's out-of-line parts have storage, in declaration order.
std::vector<bool> allocated_parts(const ServiceSpec& spec) {
    return {spec.process.allocated(),      spec.storm.allocated(),  spec.stop_when.allocated(),
            spec.give_up_when.allocated(), spec.health.allocated(), spec.ready.allocated()};
}

}  // namespace

TEST_CASE("OutOfLine: an unset part reads as T's default until edit() allocates it") {
    OutOfLine<StormSpec> storm;
    CHECK_FALSE(storm.allocated());
    CHECK(*storm == StormSpec{});
    CHECK(storm->threshold == 5.0);
    CHECK_FALSE(storm.allocated());

    storm.edit().pause = 10s;
    CHECK(storm.allocated());
    CHECK(storm->pause == 10s);
    CHECK(storm->enabled());
    // Every unset part of the same type reads the one shared default, untouched.
    CHECK_FALSE(OutOfLine<StormSpec>()->enabled());

    // set() keeps a value out of line only when it is not the default.
    storm.set(StormSpec{});
    CHECK_FALSE(storm.allocated());
    CHECK_FALSE(storm->enabled());
    storm.set(StormSpec{.pause = 5s});
    CHECK(storm.allocated());
    CHECK(storm->pause == 5s);
}

TEST_CASE("OutOfLine: copies are deep; a moved-from part reads as the default") {
    OutOfLine<Predicate> unset;
    OutOfLine<Predicate> copy_of_unset = unset;
    CHECK_FALSE(copy_of_unset.allocated());

    OutOfLine<Predicate> set;
    set.edit().exit_codes = {1, 2};
    OutOfLine<Predicate> copy = set;
    REQUIRE(copy.allocated());
    copy.edit().exit_codes.push_back(3);
    CHECK(set->exit_codes == std::vector<int>{1, 2});
    CHECK(copy->exit_codes == std::vector<int>{1, 2, 3});

    copy_of_unset = copy;
    CHECK(copy_of_unset->exit_codes == std::vector<int>{1, 2, 3});
    copy_of_unset = unset;
    CHECK_FALSE(copy_of_unset.allocated());

    OutOfLine<Predicate> moved = std::move(set);
    CHECK(moved->exit_codes == std::vector<int>{1, 2});
    CHECK_FALSE(set.allocated());  // use after move: the contract defines it
    CHECK(set->empty());
}

TEST_CASE("OutOfLine: == compares values, so an unset part equals one holding the default") {
    OutOfLine<ReadySpec> unset;
    OutOfLine<ReadySpec> defaulted;
    defaulted.edit();
    REQUIRE(defaulted.allocated());
    CHECK(unset == defaulted);
    CHECK(defaulted == unset);
    CHECK(unset == OutOfLine<ReadySpec>());

    defaulted.edit().notify = true;
    CHECK_FALSE(unset == defaulted);
    CHECK_FALSE(defaulted == unset);
    OutOfLine<ReadySpec> same;
    same.edit().notify = true;
    CHECK(same == defaulted);
}

TEST_CASE("a service that sets none of the rare keys allocates none of its out-of-line parts") {
    ServiceSpec spec = service_spec("command = [\"/bin/true\"]\n");
    CHECK(allocated_parts(spec) == std::vector<bool>(6, false));
    CHECK(spec == ServiceSpec{.name = spec.name, .file = spec.file, .command = {"/bin/true"}});

    // Each part is allocated by its own keys only.
    ServiceSpec cwd = service_spec("command = [\"x\"]\ncwd = \"/srv\"\n");
    CHECK(allocated_parts(cwd) == std::vector<bool>{true, false, false, false, false, false});
    ServiceSpec ready = service_spec("command = [\"x\"]\n[ready]\nnotify = true\n");
    CHECK(allocated_parts(ready) == std::vector<bool>{false, false, false, false, false, true});
    ServiceSpec give_up = service_spec("command = [\"x\"]\n[give_up_when]\nexit_codes = [78]\n");
    CHECK(allocated_parts(give_up) == std::vector<bool>{false, false, false, true, false, false});
}

TEST_CASE("sections written with their default values equal a file without them and cost nothing") {
    TempTree plain;
    plain.service("web", "command = [\"/bin/web\"]\n");
    TempTree spelled;
    spelled.service("web",
                    "command = [\"/bin/web\"]\n"
                    "clear_env = false\n"
                    "env_file = []\n"
                    "[env]\n"
                    "[rlimits]\n"
                    "[storm]\nthreshold = 5.0\ndecay = \"60s\"\n"
                    "[stop_when]\nexit_codes = []\n"
                    "[give_up_when]\nsignals = []\nlaunch_errors = []\n"
                    "[health]\n"
                    "[ready]\nnotify = false\n");
    auto a = plain.load();
    auto b = spelled.load();
    REQUIRE(a.has_value());
    REQUIRE_MESSAGE(b.has_value(), spelled.errors().front());
    // `file` differs only because the trees live in different directories.
    b->services[0].file = a->services[0].file;
    CHECK(allocated_parts(a->services[0]) == std::vector<bool>(6, false));
    CHECK(allocated_parts(b->services[0]) == std::vector<bool>(6, false));
    CHECK(a->services[0] == b->services[0]);
    CHECK(b->services[0] == a->services[0]);

    TempTree changed;
    changed.service("web", "command = [\"/bin/web\"]\n[stop_when]\nexit_codes = [0]\n");
    auto c = changed.load();
    REQUIRE(c.has_value());
    c->services[0].file = a->services[0].file;
    CHECK_FALSE(a->services[0] == c->services[0]);
}
