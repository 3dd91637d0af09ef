/*
 * An open-loop NATS JetStream publisher: publishes a fixed payload at a fixed rate to an R3 file
 * stream with JetStream async publish (js_PublishAsync and an ack handler), each message at its
 * intended send time whatever the acknowledgements do, and times each PubAck from that intended
 * time (so a stall shows in the latency instead of slowing the offered load: no coordinated
 * omission). Prints one line of JSON; exits 1 when the end check fails.
 *
 *   nats-openloop <urls> <stream> <stream subjects> <subject> <rate> <seconds> <warm-up seconds> <connections> <payload bytes>
 *
 *   urls         comma-separated server URLs; connection k goes to url k mod n, so the load is
 *                spread over the cluster's servers (as flowkit bench spreads its connections over
 *                the nodes) and most publishes cross a route to the stream's leader and back.
 *   stream       deleted if it exists, then created: R3, file storage, <stream subjects> (e.g. bench.>).
 *                The servers' own `jetstream { sync_interval: always }` makes it fsync every write.
 *   subject      the subject published to (e.g. bench.load; within the stream's subjects).
 *
 * Several connections, each with its own JetStream context and async acks: one sending thread
 * publishes round-robin over them; each connection's acks arrive on that connection's own delivery
 * thread (the C client's). Every connection sets sendAsap: by default the client's flusher thread
 * waits 1 ms to batch before it writes, which would add up to a millisecond to every publish.
 *
 * Each payload starts with the message's index, so the ack handler finds its intended send time
 * (start + index / rate) without a lookup. The first <warm-up> seconds of messages are sent and
 * checked like the rest but not counted in the percentiles (flowkit bench has the same warm-up).
 *
 * End check: every publish acknowledged (none refused, none left unanswered 15 s after the last
 * send, no PubAck flagged duplicate, none acked twice), and the stream holds exactly as many
 * messages as were acknowledged (its stream info, from the leader).
 *
 * Built by Benchmarks/peers/nats-compare.sh: gcc -O2 -o nats-openloop nats-openloop.c -lnats
 */
#define _GNU_SOURCE
#include <nats/nats.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Shared with the ack handlers, which run on the connections' delivery threads. */
static uint64_t start_ns;
static double rate;
static size_t total, warmup_count, payload_bytes;
static uint64_t *latencies; /* ns from the intended send time to the PubAck, by message index */
static unsigned char *answers; /* how many times each message was answered: more than 1 is a bug */
static size_t acked, refused, duplicates, malformed;
static char first_error[256];
static int have_error;

static uint64_t intended(size_t index) { return start_ns + (uint64_t)((double)index * 1e9 / rate); }

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure) {
    (void)js, (void)closure;
    uint64_t received = now_ns();
    const char *data = natsMsg_GetData(msg);
    char *end = NULL;
    size_t index = (size_t)strtoull(data ? data : "", &end, 10);
    if (!data || end == data || index >= total) {
        __atomic_fetch_add(&malformed, 1, __ATOMIC_RELAXED);
    } else if (__atomic_fetch_add(&answers[index], 1, __ATOMIC_RELAXED) > 0) {
        __atomic_fetch_add(&duplicates, 1, __ATOMIC_RELAXED);
    } else if (pa != NULL) {
        latencies[index] = received - intended(index);
        __atomic_fetch_add(&acked, 1, __ATOMIC_RELAXED);
        if (pa->Duplicate) __atomic_fetch_add(&duplicates, 1, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&refused, 1, __ATOMIC_RELAXED);
        if (pae != NULL && !__atomic_exchange_n(&have_error, 1, __ATOMIC_ACQ_REL))
            snprintf(first_error, sizeof first_error, "%s (status %d, JetStream error %d)",
                     pae->ErrText ? pae->ErrText : "", (int)pae->Err, (int)pae->ErrCode);
    }
    natsMsg_Destroy(msg);
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void fail(const char *what, natsStatus s) {
    fprintf(stderr, "nats-openloop: %s: %s\n", what, natsStatus_GetText(s));
    nats_PrintLastErrorStack(stderr);
    exit(1);
}

/* A JSON string of at most 255 bytes, with quotes and backslashes escaped. */
static void json_string(char *out, size_t size, const char *text) {
    size_t o = 0;
    out[o++] = '"';
    for (; *text && o + 3 < size; text++) {
        if (*text == '"' || *text == '\\') out[o++] = '\\';
        out[o++] = (*text >= 0 && *text < 0x20) ? ' ' : *text;
    }
    out[o++] = '"';
    out[o] = 0;
}

int main(int argc, char **argv) {
    if (argc != 10) {
        fprintf(stderr, "usage: %s <urls> <stream> <stream subjects> <subject> <rate> <seconds> <warm-up seconds> <connections> <payload bytes>\n", argv[0]);
        return 64;
    }
    const char *stream = argv[2], *stream_subjects = argv[3], *subject = argv[4];
    rate = atof(argv[5]);
    double seconds = atof(argv[6]), warmup = atof(argv[7]);
    int connections = atoi(argv[8]);
    payload_bytes = (size_t)atoi(argv[9]);
    if (rate <= 0 || seconds <= 0 || warmup < 0 || connections < 1 || payload_bytes < 24) {
        fprintf(stderr, "nats-openloop: rate and seconds must be positive, connections at least 1, the payload at least 24 bytes\n");
        return 64;
    }
    warmup_count = (size_t)(rate * warmup);
    total = warmup_count + (size_t)(rate * seconds);
    latencies = calloc(total, sizeof *latencies);
    answers = calloc(total, 1);

    /* The sender sleeps until each message is due: a 50 µs default timer slack would be a
       systematic delay added to every send (it counts in the latency, but it is ours, not NATS's). */
    prctl(PR_SET_TIMERSLACK, 1UL);

    char *urls[64];
    int url_count = 0;
    for (char *url = strtok(argv[1], ","); url && url_count < 64; url = strtok(NULL, ",")) urls[url_count++] = url;

    natsConnection **conns = calloc((size_t)connections, sizeof *conns);
    jsCtx **contexts = calloc((size_t)connections, sizeof *contexts);
    for (int k = 0; k < connections; k++) {
        natsOptions *options = NULL;
        natsStatus s = natsOptions_Create(&options);
        if (s == NATS_OK) s = natsOptions_SetURL(options, urls[k % url_count]);
        if (s == NATS_OK) s = natsOptions_SetSendAsap(options, true);
        /* A dropped connection must show as unanswered publishes, not be hidden by a reconnect. */
        if (s == NATS_OK) s = natsOptions_SetAllowReconnect(options, false);
        if (s == NATS_OK) s = natsOptions_SetName(options, "nats-openloop");
        if (s == NATS_OK) s = natsConnection_Connect(&conns[k], options);
        if (s != NATS_OK) fail(urls[k % url_count], s);
        natsOptions_Destroy(options);

        jsOptions jo;
        jsOptions_Init(&jo);
        jo.PublishAsync.AckHandler = on_ack;
        jo.PublishAsync.MaxPending = 0; /* no limit: a stalled publish would close the open loop */
        jo.Wait = 10000;
        s = natsConnection_JetStream(&contexts[k], conns[k], &jo);
        if (s != NATS_OK) fail("JetStream context", s);
    }

    /* A fresh stream each run, so its message count is exactly this run's. */
    jsErrCode jerr = 0;
    natsStatus s = js_DeleteStream(contexts[0], stream, NULL, &jerr);
    if (s != NATS_OK && s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) fail("deleting the old stream", s);
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = stream;
    const char *subjects[] = {stream_subjects};
    config.Subjects = subjects;
    config.SubjectsLen = 1;
    config.Storage = js_FileStorage;
    config.Replicas = 3;
    jsStreamInfo *info = NULL;
    s = js_AddStream(&info, contexts[0], &config, NULL, &jerr);
    if (s != NATS_OK) {
        fprintf(stderr, "nats-openloop: creating stream %s (JetStream error %d)\n", stream, (int)jerr);
        fail("js_AddStream", s);
    }
    jsStreamInfo_Destroy(info);
    /* Wait until the stream has a leader and both followers are current: before that, the first
       publishes would time the election, not the steady state. */
    int ready = 0;
    for (int attempt = 0; attempt < 100 && !ready; attempt++) {
        if (js_GetStreamInfo(&info, contexts[0], stream, NULL, &jerr) == NATS_OK) {
            jsClusterInfo *cluster = info->Cluster;
            int current = 0;
            if (cluster && cluster->Leader && *cluster->Leader)
                for (int r = 0; r < cluster->ReplicasLen; r++) current += cluster->Replicas[r]->Current && !cluster->Replicas[r]->Offline;
            ready = cluster && cluster->Leader && *cluster->Leader && current == 2;
            jsStreamInfo_Destroy(info);
        }
        if (!ready) nats_Sleep(100);
    }
    if (!ready) {
        fprintf(stderr, "nats-openloop: stream %s has no leader with 2 current followers after 10 s\n", stream);
        return 1;
    }

    char *payload = malloc(payload_bytes);
    memset(payload, 'x', payload_bytes);
    size_t publish_errors = 0;
    char publish_error[256] = "";
    start_ns = now_ns() + 100000000; /* 100 ms to get going */
    size_t next = 0;
    while (next < total) {
        uint64_t due = intended(next);
        if (now_ns() < due) {
            struct timespec at = {.tv_sec = (time_t)(due / 1000000000u), .tv_nsec = (long)(due % 1000000000u)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        }
        /* Everything due by now, even if we overslept or a publish was slow. */
        uint64_t now = now_ns();
        while (next < total && intended(next) <= now) {
            int length = snprintf(payload, payload_bytes, "%020zu", next);
            payload[length] = ' ';
            s = js_PublishAsync(contexts[next % (size_t)connections], subject, payload, (int)payload_bytes, NULL);
            if (s != NATS_OK) {
                if (!publish_errors++) snprintf(publish_error, sizeof publish_error, "%s", natsStatus_GetText(s));
                answers[next] = 1; /* never sent: an ack for it would be a bug */
            }
            next++;
        }
    }

    /* The last acks: up to 15 s over all the connections together. */
    uint64_t deadline = now_ns() + 15000000000u;
    for (int k = 0; k < connections; k++) {
        uint64_t now = now_ns();
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = now < deadline ? (int64_t)((deadline - now) / 1000000u) + 1 : 1;
        js_PublishAsyncComplete(contexts[k], &po);
    }
    int64_t stream_messages = -1;
    if (js_GetStreamInfo(&info, contexts[0], stream, NULL, &jerr) == NATS_OK) {
        stream_messages = (int64_t)info->State.Msgs;
        jsStreamInfo_Destroy(info);
    }

    /* Stop the delivery threads before reading what they wrote. */
    for (int k = 0; k < connections; k++) {
        jsCtx_Destroy(contexts[k]);
        natsConnection_Destroy(conns[k]);
    }
    size_t sent = total - publish_errors;
    size_t answered = __atomic_load_n(&acked, __ATOMIC_ACQUIRE) + __atomic_load_n(&refused, __ATOMIC_ACQUIRE);
    size_t unanswered = sent > answered ? sent - answered : 0;

    size_t measured = 0;
    uint64_t *sample = malloc((total + 1) * sizeof *sample);
    for (size_t index = warmup_count; index < total; index++)
        if (latencies[index]) sample[measured++] = latencies[index];
    qsort(sample, measured, sizeof *sample, compare);
#define AT(q) (measured ? (double)sample[(size_t)((double)(measured - 1) * (q))] / 1e6 : 0.0)

    char problems[2048] = "";
    size_t used = 0;
#define PROBLEM(...) used += (size_t)snprintf(problems + used, used < sizeof problems ? sizeof problems - used : 0, __VA_ARGS__)
    if (publish_errors) PROBLEM("%s\"%zu publishes failed: %s\"", used ? "," : "", publish_errors, publish_error);
    if (refused) PROBLEM("%s\"%zu publishes refused: %s\"", used ? "," : "", refused, first_error);
    if (unanswered) PROBLEM("%s\"%zu publishes never acknowledged\"", used ? "," : "", unanswered);
    if (duplicates) PROBLEM("%s\"%zu duplicate acknowledgements\"", used ? "," : "", duplicates);
    if (malformed) PROBLEM("%s\"%zu acknowledgements for no message of ours\"", used ? "," : "", malformed);
    if (stream_messages != (int64_t)acked)
        PROBLEM("%s\"the stream holds %lld messages, %zu were acknowledged\"", used ? "," : "", (long long)stream_messages, acked);
    int passed = used == 0;

    char subject_json[300], stream_json[300];
    json_string(subject_json, sizeof subject_json, subject);
    json_string(stream_json, sizeof stream_json, stream);
    printf("{\"rate\":%.0f,\"seconds\":%.1f,\"warmupSeconds\":%.1f,\"connections\":%d,\"payloadBytes\":%zu,"
           "\"stream\":%s,\"subject\":%s,\"total\":%zu,\"sent\":%zu,\"acked\":%zu,\"errors\":%zu,\"refused\":%zu,"
           "\"publishErrors\":%zu,\"unanswered\":%zu,\"duplicates\":%zu,\"streamMessages\":%lld,\"measured\":%zu,"
           "\"achievedPerSecond\":%.0f,\"p50Ms\":%.3f,\"p90Ms\":%.3f,\"p99Ms\":%.3f,\"p999Ms\":%.3f,\"maxMs\":%.3f,"
           "\"passed\":%s,\"problems\":[%s]}\n",
           rate, seconds, warmup, connections, payload_bytes, stream_json, subject_json, total, sent, acked,
           refused + publish_errors + unanswered + duplicates + malformed, refused, publish_errors, unanswered, duplicates,
           (long long)stream_messages, measured, (double)measured / seconds,
           AT(0.5), AT(0.9), AT(0.99), AT(0.999), measured ? (double)sample[measured - 1] / 1e6 : 0.0,
           passed ? "true" : "false", problems);
    return passed ? 0 : 1;
}
