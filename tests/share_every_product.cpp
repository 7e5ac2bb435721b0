// Linked into the blocks' tests: every product is cut between all of a call's threads
// (egelu::set_min_work_per_thread(0)), so that the tests' small shapes exercise the
// threaded paths (a product's tasks on 2 and 3 threads, at one token too), which the
// default leaves to one thread below 2^18 multiply-adds. The default itself is tested in
// test_gated_feed_forward (Threads.*).
#include <egelu/threads.hpp>

namespace {
const long every_product_shared = (egelu::set_min_work_per_thread(0), 0);
}  // namespace
