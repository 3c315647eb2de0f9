// The tickets of the transfer ring (ops_impl/kernels/transfer_streams.h), which ms_memcopy.nn.TransferQueue
// polls: a ticket is pending until its launch reports a ring slot, not done while the slot's transfer is
// queued behind a held stream (a poll never waits: aclhostGetHostWaitCount unchanged), done once it has
// run, and still done after the slot was reused; a poller on another thread runs against the launches
// (the sanitizer builds check the ring's lock); a failed launch raises from Done() and Wait(), also
// one that failed after taking its slot, and a launch that queued no transfer fails its ticket.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "../cpp/check.h"
#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"
#include "transfer_streams.h"

namespace {

using test::Expect;
using test::Require;

void Block(void *gate) {
  while (!static_cast<std::atomic<bool> *>(gate)->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A transfer of `ring` on `stream`, reported to `ticket` as an asynchronous form's launch does
// (`failing`: as a launch whose body failed after it took the slot).
void Launch(msmc::TransferRing &ring, aclrtStream stream, msmc::TransferTicket *ticket,
            const std::shared_ptr<void> &owner, bool failing = false) {
  msmc::TicketScope scope(ticket, owner);
  msmc::TransferRing::Slot &slot = ring.Acquire();
  ring.Release(slot, stream);
  msmc::NoteTransfer(ring, slot, failing);
}

bool Throws(const std::function<void()> &call, const std::string &text) {
  try {
    call();
  } catch (const std::runtime_error &e) {
    return std::string(e.what()).find(text) != std::string::npos;
  }
  return false;
}

}  // namespace

int main() {
  aclrtStream stream = test::StreamOnDevice0();
  auto owner = std::make_shared<msmc::TransferRing>();
  msmc::TransferRing &ring = *owner;

  msmc::TransferTicket ticket;
  Expect(!ticket.Done(), "a ticket whose launch was not made is not done");
  std::atomic<bool> gate{false};
  Require(aclhostLaunchHostFunc(stream, &Block, &gate), "aclhostLaunchHostFunc");
  Launch(ring, stream, &ticket, owner);
  const uint64_t waits = test::HostWaits();
  std::atomic<bool> stop{false};
  std::atomic<int> polls{0};
  std::thread poller([&] {
    while (!stop.load()) {
      (void)ticket.Done();
      polls.fetch_add(1);
    }
  });
  for (int i = 0; i < 100 && polls.load() < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Expect(!ticket.Done(), "not done while the stream is held");
  Expect(test::HostWaits() == waits, "polling waits for nothing");
  gate.store(true);
  ticket.Wait();
  stop.store(true);
  poller.join();
  Expect(ticket.Done(), "done after Wait()");

  msmc::TransferTicket reused;
  Launch(ring, stream, &reused, owner);
  for (size_t i = 0; i < msmc::TransferRing::kSlots; ++i) {  // the slot is taken again
    msmc::TransferTicket other;
    Launch(ring, stream, &other, owner);
  }
  Expect(reused.Done(), "a reused slot's earlier transfer is done");

  msmc::TransferTicket failed;
  Launch(ring, stream, &failed, owner);
  failed.Fail("ms_memcopy X: broken");
  Expect(Throws([&] { failed.Wait(); }, "broken"), "a failed launch raises from Wait()");
  Expect(Throws([&] { (void)failed.Done(); }, "broken"), "and from Done()");

  // A launch that failed after taking its slot: its waiters wait for the entry's error, even once the
  // slot's transfer has run, and raise it.
  msmc::TransferTicket failing;
  Launch(ring, stream, &failing, owner, true);
  Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
  Expect(!failing.Done(), "not done before the entry reported the failure");
  std::atomic<bool> raised{false};
  std::thread waiter([&] { raised.store(Throws([&] { failing.Wait(); }, "late")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  failing.Fail("ms_memcopy Z: late");
  waiter.join();
  Expect(raised.load(), "Wait() waits for the failure and raises it");
  Expect(Throws([&] { (void)failing.Done(); }, "late"), "and Done() raises it");

  msmc::TransferTicket empty;
  {
    msmc::TicketScope scope(&empty, owner);
  }
  empty.Finish("Y");
  Expect(Throws([&] { empty.Wait(); }, "Y: queued no transfer"), "a launch without a transfer fails its ticket");

  Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
  owner.reset();
  Require(aclrtDestroyStream(stream), "aclrtDestroyStream");
  return test::Finish();
}
