#include "budget/fair_queue.h"

#include <algorithm>
#include <vector>

namespace brake {

void FairQueue::Push(uint64_t id, const std::string& user,
                     const std::string& task) {
  auto u = users_by_name_.find(user);
  if (u == users_by_name_.end()) {
    users_.push_back(UserLine{user, {}, {}});
    u = users_by_name_.emplace(user, std::prev(users_.end())).first;
  }
  UserLine& line = *u->second;
  auto t = line.by_task.find(task);
  if (t == line.by_task.end()) {
    line.tasks.push_back(TaskLine{task, {}});
    t = line.by_task.emplace(task, std::prev(line.tasks.end())).first;
  }
  t->second->ids.push_back(id);
  where_[id] = Where{u->second, t->second};
}

void FairQueue::DropIfEmpty(std::list<UserLine>::iterator user,
                            std::list<TaskLine>::iterator task) {
  if (!task->ids.empty()) return;
  user->by_task.erase(task->task);
  user->tasks.erase(task);
  if (!user->tasks.empty()) return;
  users_by_name_.erase(user->user);
  users_.erase(user);
}

bool FairQueue::Remove(uint64_t id) {
  auto it = where_.find(id);
  if (it == where_.end()) return false;
  Where w = it->second;
  where_.erase(it);
  auto& ids = w.task->ids;
  ids.erase(std::find(ids.begin(), ids.end(), id));
  DropIfEmpty(w.user, w.task);
  return true;
}

int FairQueue::Serve(const std::function<bool(uint64_t id)>& try_grant) {
  int granted = 0;
  bool progress = true;
  while (progress && !users_.empty()) {
    progress = false;
    // One pass: each user in rotation order is offered its tasks' heads in
    // their rotation order until one is granted. Served lines move to the
    // back, past the end of this pass's snapshot.
    std::vector<std::list<UserLine>::iterator> users;
    for (auto u = users_.begin(); u != users_.end(); ++u) users.push_back(u);
    for (auto u : users) {
      std::vector<std::list<TaskLine>::iterator> tasks;
      for (auto t = u->tasks.begin(); t != u->tasks.end(); ++t)
        tasks.push_back(t);
      bool user_served = false;
      for (auto t : tasks) {
        uint64_t head = t->ids.front();
        if (!try_grant(head)) continue;
        ++granted;
        progress = true;
        user_served = true;
        where_.erase(head);
        t->ids.pop_front();
        if (t->ids.empty()) {
          u->by_task.erase(t->task);
          u->tasks.erase(t);
        } else {
          u->tasks.splice(u->tasks.end(), u->tasks, t);
        }
        break;  // one grant per user per pass: then the next user's turn
      }
      if (u->tasks.empty()) {
        users_by_name_.erase(u->user);
        users_.erase(u);
      } else if (user_served) {
        users_.splice(users_.end(), users_, u);
      }
    }
  }
  return granted;
}

}  // namespace brake
