/*
 * skillctl-supervise: run one command and leave none of its processes behind.
 *
 *     skillctl-supervise [--keep-background] -- COMMAND [ARG...]
 *
 * Every command the agent runs in the sandbox goes through this (the sandbox wraps it as
 * `skillctl-supervise -- timeout -k K N sh -c CMD`). It makes itself a *child subreaper*
 * (prctl PR_SET_CHILD_SUBREAPER), so every process the command starts that loses its parent
 * -- `cmd &`, `nohup`, `setsid`, a double fork -- is re-parented to it instead of to the
 * container's init: nothing the command starts can leave its tree. When COMMAND ends (it
 * exited, or `timeout` gave up on it), every remaining descendant is killed with SIGKILL and
 * reaped, in rounds until none is left: a fork bomb keeps forking while it is being killed, so
 * one pass is not enough. Only descendants are touched: the other commands running in the same
 * container at the same time have other supervisors and are not in this tree.
 *
 * --keep-background keeps background services alive after COMMAND exited on its own. The
 * command's output then goes through pipes this program relays, so that it can end the output
 * when COMMAND ends, although services may still hold those pipes (without the relay they would
 * keep the exec open forever): what a kept process writes to them afterwards gets EPIPE, as on a
 * closed terminal, so a service should write to a file (`nohup srv > log 2>&1 &`). After a
 * timeout (COMMAND ended with 124 or 137, timeout's codes) everything is killed anyway.
 *
 * Exit status: COMMAND's (128 + N when signal N ended it); 125 when the supervisor itself
 * cannot work (bad usage, prctl or fork failed); 126/127 when COMMAND cannot be run. SIGTERM,
 * SIGINT or SIGHUP to the supervisor kill the whole tree, then it exits with 128 + the signal.
 *
 * Killing by pid races with pid reuse (a descendant dies, its pid goes to an unrelated
 * process). Where the kernel has pidfds, each target is pinned with pidfd_open and its parent
 * checked again before the signal is sent through the pidfd, so a recycled pid is never hit.
 *
 * Built statically on the host (`skillctl image build` does it with the system C compiler) and
 * copied into the image; no libc beyond the standard one.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static volatile sig_atomic_t stop_signal = 0;
static pid_t self;
static int have_pidfd = 1;

static void on_stop(int sig) { stop_signal = sig; }

static void say(const char *what) {
    /* One line on stderr, which the sandbox returns with the command's own stderr. */
    char line[256];
    int n = snprintf(line, sizeof line, "skillctl-supervise: %s\n", what);
    if (n > 0) {
        ssize_t ignored = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)ignored;
    }
}

/* The parent of `pid` from /proc/PID/stat, or -1 when it is gone or unreadable. The command
 * name is in parentheses and may itself contain spaces and ')': the fields resume after the
 * LAST ')'. */
static pid_t parent_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *end = strrchr(buf, ')');
    if (end == NULL) return -1;
    char state;
    int ppid;
    if (sscanf(end + 1, " %c %d", &state, &ppid) != 2) return -1;
    return (pid_t)ppid;
}

struct entry {
    pid_t pid, ppid;
    char mine;
};

struct procs {
    struct entry *e;
    size_t n, cap;
    pid_t *queue;
};

static int by_ppid(const void *a, const void *b) {
    pid_t x = ((const struct entry *)a)->ppid, y = ((const struct entry *)b)->ppid;
    return (x > y) - (x < y);
}

/* Every process in /proc with its parent, sorted by parent; those descending from us are
 * marked by a walk down from our pid (n log n: the tree of a fork bomb can be deep). */
static void scan(struct procs *p) {
    p->n = 0;
    DIR *dir = opendir("/proc");
    if (dir == NULL) return;
    struct dirent *dent;
    while ((dent = readdir(dir)) != NULL) {
        char *rest;
        long value = strtol(dent->d_name, &rest, 10);
        if (*rest != '\0' || value <= 0 || (pid_t)value == self) continue;
        pid_t ppid = parent_of((pid_t)value);
        if (ppid < 0) continue;
        if (p->n == p->cap) {
            size_t cap = p->cap ? p->cap * 2 : 512;
            struct entry *e = realloc(p->e, cap * sizeof *e);
            if (e == NULL) break; /* out of memory: use what was read; the next round rescans */
            p->e = e;
            pid_t *q = realloc(p->queue, (cap + 1) * sizeof *q);
            if (q == NULL) break;
            p->queue = q;
            p->cap = cap;
        }
        p->e[p->n].pid = (pid_t)value;
        p->e[p->n].ppid = ppid;
        p->e[p->n].mine = 0;
        p->n++;
    }
    closedir(dir);
    if (p->n == 0) return;
    qsort(p->e, p->n, sizeof *p->e, by_ppid);
    size_t head = 0, tail = 0;
    p->queue[tail++] = self;
    while (head < tail) {
        pid_t parent = p->queue[head++];
        size_t lo = 0, hi = p->n; /* first entry whose ppid >= parent */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p->e[mid].ppid < parent) lo = mid + 1;
            else hi = mid;
        }
        for (size_t k = lo; k < p->n && p->e[k].ppid == parent; k++) {
            if (!p->e[k].mine && tail <= p->n) {
                p->e[k].mine = 1;
                p->queue[tail++] = p->e[k].pid;
            }
        }
    }
}

/* SIGKILL one of the processes the last scan found to be ours, if it still is. */
static void kill_one(const struct entry *e) {
    if (have_pidfd) {
        int fd = (int)syscall(SYS_pidfd_open, e->pid, 0);
        if (fd >= 0) {
            /* Pinned. Same parent as scanned (or re-parented to us): the same process, or a
             * recycled pid whose parent is ours anyway. Anything else is left for the next
             * round's scan. */
            pid_t ppid = parent_of(e->pid);
            if (ppid == e->ppid || ppid == self) syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
            close(fd);
            return;
        }
        if (errno == ESRCH) return;
        have_pidfd = 0; /* ENOSYS (old kernel) or refused by seccomp: plain kill from now on */
    }
    kill(e->pid, SIGKILL);
}

static void reap_ready(void) {
    while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {
    }
}

/* Kill every descendant, in rounds, until we have no child left at all. */
static void kill_all(struct procs *p) {
    for (;;) {
        scan(p);
        for (size_t i = 0; i < p->n; i++)
            if (p->e[i].mine) kill_one(&p->e[i]);
        /* Blocks until a child dies; ECHILD means none is left, and since every orphan of the
         * tree comes to us, no descendant is left either. */
        if (waitpid(-1, NULL, __WALL) < 0 && errno == ECHILD) return;
        reap_ready();
    }
}

static void write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; /* the reader is gone: drop the rest, keep supervising */
        buf += n;
        len -= (size_t)n;
    }
}

/* Copy what is readable on `from` to `to`; at most `limit` bytes (0: one read). Closes `from`
 * and sets it to -1 at end of file. */
static void relay(int *from, int to, size_t limit) {
    char buf[65536];
    size_t moved = 0;
    do {
        size_t want = sizeof buf;
        if (limit && limit - moved < want) want = limit - moved;
        ssize_t n = read(*from, buf, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return; /* EAGAIN or an error: nothing more now */
        if (n == 0) {
            close(*from);
            *from = -1;
            return;
        }
        write_all(to, buf, (size_t)n);
        moved += (size_t)n;
    } while (limit && moved < limit);
}

/* Relay the command's output until COMMAND ends; then pass on what it left in the pipes (what
 * is there at that moment, not what kept processes keep writing) and close them. Returns
 * whether COMMAND ended (0 when a stop signal came first). */
static int relay_until_exit(pid_t child, int fds[2], const sigset_t *waiting, int *status) {
    int ended = 0;
    while (!ended && !stop_signal) {
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
            if (pid == child) {
                *status = st;
                ended = 1;
            }
        }
        if (ended) break;
        struct pollfd polled[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        /* SIGCHLD is blocked except inside ppoll: a child that ends between the waitpid above
         * and this call still wakes it. */
        if (ppoll(polled, 2, NULL, waiting) < 0) continue;
        for (int k = 0; k < 2; k++)
            if (fds[k] >= 0 && (polled[k].revents & (POLLIN | POLLHUP | POLLERR))) relay(&fds[k], k + 1, 0);
    }
    for (int k = 0; k < 2; k++) {
        if (fds[k] < 0) continue;
        int pending = 0;
        if (ioctl(fds[k], FIONREAD, &pending) == 0 && pending > 0) {
            fcntl(fds[k], F_SETFL, fcntl(fds[k], F_GETFL) | O_NONBLOCK);
            relay(&fds[k], k + 1, (size_t)pending);
        }
        if (fds[k] >= 0) close(fds[k]);
    }
    return ended;
}

static void on_child(int sig) { (void)sig; }

int main(int argc, char **argv) {
    int keep = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--keep-background") == 0) {
            keep = 1;
            continue;
        }
        say("usage: skillctl-supervise [--keep-background] -- COMMAND [ARG...]");
        return 125;
    }
    if (i >= argc) {
        say("usage: skillctl-supervise [--keep-background] -- COMMAND [ARG...]");
        return 125;
    }
    self = getpid();
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        say("cannot become a child subreaper (prctl failed)");
        return 125;
    }
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_stop; /* no SA_RESTART: waitpid returns EINTR and we clean up */
    sigemptyset(&act.sa_mask);
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGHUP, &act, NULL);

    /* Keep mode: the command writes into our pipes, and we relay. SIGCHLD is blocked outside
     * ppoll (and handled, so that it interrupts ppoll at all); SIGPIPE is ignored so that a
     * reader gone away cannot kill us. Both are undone in the child before it runs COMMAND. */
    int pipes[2][2] = {{-1, -1}, {-1, -1}};
    sigset_t blocked, waiting;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGCHLD);
    sigprocmask(SIG_BLOCK, NULL, &waiting);
    if (keep) {
        if (pipe2(pipes[0], O_CLOEXEC) != 0 || pipe2(pipes[1], O_CLOEXEC) != 0) {
            say("cannot create the output pipes");
            return 125;
        }
        struct sigaction chld;
        memset(&chld, 0, sizeof chld);
        chld.sa_handler = on_child;
        sigemptyset(&chld.sa_mask);
        sigaction(SIGCHLD, &chld, NULL);
        signal(SIGPIPE, SIG_IGN);
        sigprocmask(SIG_BLOCK, &blocked, NULL);
    }

    pid_t child = fork();
    if (child < 0) {
        say("cannot start the command (fork failed: the process limit may be reached)");
        return 125;
    }
    if (child == 0) {
        /* Default dispositions and mask back (exec keeps ignored signals and the mask). */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, &waiting, NULL);
        if (keep && (dup2(pipes[0][1], 1) < 0 || dup2(pipes[1][1], 2) < 0)) _exit(125);
        execvp(argv[i], argv + i);
        int code = errno == ENOENT ? 127 : 126;
        say("cannot run the command");
        _exit(code);
    }

    int status = 0, ended = 0;
    if (keep) {
        close(pipes[0][1]);
        close(pipes[1][1]);
        int fds[2] = {pipes[0][0], pipes[1][0]};
        ended = relay_until_exit(child, fds, &waiting, &status);
    }
    while (!ended && !stop_signal) {
        int st;
        pid_t pid = waitpid(-1, &st, __WALL);
        if (pid == child) {
            status = st;
            ended = 1;
        } else if (pid < 0 && errno != EINTR) {
            break; /* ECHILD cannot happen while the command runs; leave rather than spin */
        }
        /* Any other pid: an orphan of the command that ended; reaped, nothing else to do. */
    }

    struct procs p = {0};
    int timed_out = ended && WIFEXITED(status) && (WEXITSTATUS(status) == 124 || WEXITSTATUS(status) == 137);
    if (!(keep && ended && !stop_signal && !timed_out)) kill_all(&p);
    if (stop_signal) return 128 + stop_signal;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
