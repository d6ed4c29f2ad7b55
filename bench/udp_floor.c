/*
 * udp_floor: the fastest a UDP socket on this kernel carries 64-byte datagrams
 * over loopback, one datagram per message (no GSO), so bench/perf_vs_iperf3 can
 * show how far netrig-perf and iperf3 each are from it.
 *
 * The sender is a bare loop of sendmmsg() batches on a connected socket: no
 * timestamps, sequence numbers or budget. On loopback the sender's CPU also runs
 * the receive path (softirq) up to the receiving socket's queue, so the sender's
 * core is the bottleneck. The receiver spins on recvmmsg(MSG_DONTWAIT) on the
 * other core, so it never sleeps and the sender never pays to wake it. Neither
 * tool can send faster through a socket; the ratio floor/iperf3 is the most any
 * socket-based sender can gain over iperf3 on this machine.
 *
 * usage: udp_floor SECONDS PORT   ->  one JSON line {"sent_pps": .., "received_pps": ..}
 * Bounded: it runs SECONDS (at most 60) and stops by itself.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define LEN 64
#define BATCH 64

static atomic_int stop;
static long received;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *receive(void *arg)
{
	int fd = *(int *)arg;
	static char bufs[BATCH][2048];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof bufs[i];
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load(&stop)) {
		int n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n > 0)
			received += n;
	}
	/* What is queued when the sender stops still counts. */
	for (int n; (n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL)) > 0;)
		received += n;
	return NULL;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SECONDS PORT\n", argv[0]);
		return 2;
	}
	double secs = atof(argv[1]);
	int port = atoi(argv[2]);
	if (secs <= 0 || secs > 60 || port <= 0 || port > 65535) {
		fprintf(stderr, "udp_floor: SECONDS must be in (0, 60] and PORT in 1..65535\n");
		return 2;
	}
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int rx = socket(AF_INET, SOCK_DGRAM, 0);
	int tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (rx < 0 || tx < 0)
		die("socket");
	/* The queue netrig-perf asks for (4 MiB), so neither side drops for lack of it. */
	int size = 4 << 20;
	if (setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
		setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	if (bind(rx, (struct sockaddr *)&addr, sizeof addr) < 0)
		die("bind");
	if (connect(tx, (struct sockaddr *)&addr, sizeof addr) < 0)
		die("connect");
	pthread_t thread;
	if (pthread_create(&thread, NULL, receive, &rx) != 0)
		die("pthread_create");

	char payload[LEN] = {0};
	struct iovec iov = {.iov_base = payload, .iov_len = LEN};
	struct mmsghdr msgs[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	long sent = 0;
	double start = now_s(), end = start;
	while (end - start < secs) {
		int n = sendmmsg(tx, msgs, BATCH, 0);
		if (n > 0)
			sent += n;
		end = now_s();
	}
	atomic_store(&stop, 1);
	pthread_join(thread, NULL);
	printf("{\"sent_pps\": %.0f, \"received_pps\": %.0f}\n", sent / (end - start),
	       received / (end - start));
	return 0;
}
