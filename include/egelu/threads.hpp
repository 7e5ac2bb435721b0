// How the blocks of egelu::nn hold the threads of a ThreadPoolDevice between calls.
/// @file
/// egelu::set_thread_linger: how long the blocks' pool tasks wait for the next call, and
/// egelu::set_min_work_per_thread: how small a call's work may be cut between threads (egelu::nn).
#ifndef EGELU_THREADS_HPP
#define EGELU_THREADS_HPP

#include <chrono>
#include <egelu/internal/nn_api.hpp>

namespace egelu {

/// The default of set_thread_linger: 300 microseconds.
constexpr std::chrono::microseconds default_thread_linger{300};

/// Sets, for the whole process, how long a block's pool tasks stay after a multi-threaded call
/// for the next call of any block on the same pool, and returns the previous setting.
///
/// A call on a ThreadPoolDevice of n threads runs on the calling thread and n − 1 pool tasks.
/// After the call those tasks wait, yielding, for the linger time, and the next call (the same
/// block's or another's: a model's next layer) takes them over instead of scheduling new ones;
/// scheduling wakes a sleeping pool thread, which costs 15–40 µs on a VM, a tenth of a decode
/// step. Meanwhile the pool thread runs no other task of the pool: set 0 where the pool serves
/// other work between the blocks' calls and that work cannot wait, or a longer time where a
/// model's other layers take longer than 300 µs between blocks.
EGELU_NN_API std::chrono::microseconds set_thread_linger(std::chrono::microseconds linger);

/// The default of set_min_work_per_thread: 2^17 multiply-adds.
constexpr long default_min_work_per_thread = 1L << 17;

/// Sets, for the whole process, the least work a block's multi-threaded call gives a thread, in
/// multiply-adds of one product, and returns the previous setting; 0 (or less) gives every call
/// all of the device's threads.
///
/// A call whose largest product has m multiply-adds runs on at most max(1, m / least) of the
/// device's threads (one: the calling thread alone, waking no pool thread), and a mixture of
/// experts cuts each expert's products so too. Below that, handing work to another core costs more
/// than it saves: small BERT-shaped blocks at one token took 2-4.5x the one-thread time on two
/// threads when every product was cut (docs/DESIGN.md, "Threads"). Results are the same bits
/// whatever the setting. A call reads it once, when it starts.
EGELU_NN_API long set_min_work_per_thread(long multiply_adds);

}  // namespace egelu

#endif  // EGELU_THREADS_HPP
