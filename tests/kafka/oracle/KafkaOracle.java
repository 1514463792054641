import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;

/**
 * Kafka's own segment recovery as a differential oracle for segdex's tests (never shipped, never copied).
 *
 * <p>Reads one request per line on stdin: {@code <partition dir>\t<index.interval.bytes>\t<segment.index.bytes>}.
 * The dir is a scratch copy holding only {@code .log} files; the oracle recovers every segment in offset order
 * as {@code LogLoader.recoverLog} does with no recovery point (one {@code ProducerStateManager} and one
 * {@code LeaderEpochFileCache} carried from segment to segment, {@code LogSegment.recover} then
 * {@code LogSegment.close}), which leaves the index files Kafka writes beside each {@code .log}. It answers one
 * JSON line per request:
 * {@code {"segments":[{"baseOffset","sizeBefore","validBytes","truncated","exception"}],"epochs":[[e,o]...]}}.
 * {@code exception} is the class and message of anything {@code recover} threw (a thrown exception fails the
 * broker's log loading); after the first segment that truncated or threw, {@code LogLoader} deletes the rest,
 * so the oracle stops there too ({@code "stoppedAt"}).
 *
 * <p>{@code bench\t<dir>\t<baseOffset>\t<index.interval.bytes>\t<segment.index.bytes>\t<runs>} times
 * {@code LogSegment.recover} of one segment {@code runs} times in this JVM (index files removed before each run;
 * the caller discards the first runs as JIT warm-up) and answers {@code {"ms":[...]}}: what the benchmarks in
 * {@code benchmarks/} put beside segdex's figures.
 *
 * <p>{@code load\t<partition dir>\t<logStartOffset>\t<recoveryPoint>\t<clean 0|1>\t<now ms>\t<k=v;k=v>} is a
 * broker's start and clean stop of one partition: {@code UnifiedLog} is created as {@code LogManager.loadLog} creates
 * it (Kafka's {@code LogLoader}: the clean-shutdown flag, the checkpointed log start offset and recovery point, a
 * clock fixed at {@code now} for producer expiry), then flushed and closed as {@code LogManager.shutdown} does. The
 * dir is left as Kafka leaves it (index files, producer snapshots, {@code leader-epoch-checkpoint}); the answer is
 * {@code {"logStartOffset","logEndOffset","recoveryPoint"}} or {@code {"exception"}}. The topic config's keys and
 * values come as {@code k=v} pairs.
 *
 * <p>{@code cleanable\t<partition dir>\t<logStartOffset>\t<now ms>\t<high watermark>\t<checkpoint|->\t<dedupe
 * bytes>\t<k=v;k=v>[\t<recoveryPoint>\t<clean 0|1>[\t<ioBufferSize>\t<maxIoBufferSize>]]} is the log cleaner's
 * choice for the partition (Kafka 4.x only), and with a dedupe buffer one cleaning round: see {@code cleanable}.
 * The log is opened as after an unclean shutdown with no recovery point unless those fields say otherwise; the
 * cleaner's read buffer starts at {@code ioBufferSize} (262144) and the broker's {@code message.max.bytes} is
 * {@code maxIoBufferSize} (1048588).
 *
 * <p>{@code validate\t<topic config name>\t<value>} is {@code LogConfig.validate} of that one config (a topic's
 * create or alter): {@code {"ok":true}} or {@code {"error":"<Kafka's message>"}}.
 *
 * <p>{@code stream\t<codec id>\t<magic>\t<payload file>\t<ops>} reads a compressed payload through Kafka's
 * decompressing stream: see {@code stream}.
 *
 * <p>{@code LogSegment.recover} takes {@code Optional<LeaderEpochFileCache>} in 3.9 and the cache itself in
 * 4.x: the call goes through reflection so that one source serves both families.
 */
public final class KafkaOracle {
    private static final TopicPartition TP = new TopicPartition("oracle", 0);

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        // Kafka logs to stdout through the appender; keep the protocol channel clean.
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            String answer;
            try {
                if (f[0].equals("load")) {
                    answer = load(new File(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]),
                        f[4].equals("1"), Long.parseLong(f[5]), f.length > 6 ? f[6] : "");
                } else if (f[0].equals("cleanable")) {
                    answer = cleanable(new File(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]),
                        Long.parseLong(f[4]), f[5], Integer.parseInt(f[6]), f.length > 7 ? f[7] : "",
                        f.length > 8 ? Long.parseLong(f[8]) : 0, f.length > 9 && f[9].equals("1"),
                        f.length > 10 ? Integer.parseInt(f[10]) : 262144,
                        f.length > 11 ? Integer.parseInt(f[11]) : 1048588,
                        f.length > 12 ? Double.parseDouble(f[12]) : 0.9);
                } else if (f[0].equals("validate")) {
                    answer = validate(f[1], f.length > 2 ? f[2] : "");
                } else if (f[0].equals("broker")) {
                    answer = brokerValue(f[1], f.length > 2 ? f[2] : "");
                } else if (f[0].equals("checkpoint")) {
                    answer = checkpoint(f[1], new File(f[2]));
                } else if (f[0].equals("stream")) {
                    answer = stream(Integer.parseInt(f[1]), Byte.parseByte(f[2]), new File(f[3]), f.length > 4 ? f[4] : "");
                } else if (f[0].equals("bench")) {
                    answer = bench(new File(f[1]), Long.parseLong(f[2]), Integer.parseInt(f[3]),
                        Integer.parseInt(f[4]), Integer.parseInt(f[5]));
                } else {
                    answer = recoverDir(new File(f[0]), Integer.parseInt(f[1]), Integer.parseInt(f[2]));
                }
            } catch (Throwable t) {
                answer = "{\"fatal\":" + quote(describe(t)) + "}";
            }
            out.println(answer);
        }
    }

    private static String validate(String name, String value) throws Exception {
        Map<String, String> config = new HashMap<>();
        config.put(name, value);
        java.util.Properties props = new java.util.Properties();
        props.putAll(config);
        try {
            try {  // 4.x: validate(Map<String, String>); 3.9: validate(Properties)
                LogConfig.class.getMethod("validate", Map.class).invoke(null, config);
            } catch (NoSuchMethodException e) {
                LogConfig.class.getMethod("validate", java.util.Properties.class).invoke(null, props);
            }
            return "{\"ok\":true}";
        } catch (InvocationTargetException e) {
            return "{\"error\":" + quote(e.getCause().getMessage()) + "}";
        }
    }

    /**
     * One broker setting's value as {@code KafkaConfig}'s {@code ConfigDef} parses it when the broker starts: the
     * key's type ({@code ConfigDef.parseType}), then its validator. {@code {"error"}} with the message where it
     * refuses the value, {@code {"ok"}} else; {@code {"unknown"}} for a key the broker does not define.
     */
    private static String brokerValue(String name, String value) throws Exception {
        ConfigDef def = (ConfigDef) Class.forName("kafka.server.KafkaConfig").getMethod("configDef").invoke(null);
        ConfigDef.ConfigKey key = def.configKeys().get(name);
        if (key == null) return "{\"unknown\":true}";
        try {
            Object parsed = ConfigDef.parseType(name, value, key.type);
            if (key.validator != null) key.validator.ensureValid(name, parsed);
            return "{\"ok\":true}";
        } catch (org.apache.kafka.common.config.ConfigException e) {
            return "{\"error\":" + quote(e.getMessage()) + "}";
        }
    }

    /** A checkpoint file as the broker reads it: {"entries": [[epoch, offset], ...] or [[topic, partition, offset],
     *  ...]} (offset checkpoints sorted), or {"exception": ...} where the read throws. Kafka 4.x's classes (read
     *  through reflection: the oracle compiles against 3.9 too, whose OffsetCheckpointFile is Scala's). */
    @SuppressWarnings("unchecked")
    private static String checkpoint(String kind, File file) throws Exception {
        List<String> entries = new ArrayList<>();
        try {
            if (kind.equals("epoch")) {
                for (Object e : new LeaderEpochCheckpointFile(file, new LogDirFailureChannel(1)).read())
                    entries.add("[" + e.getClass().getMethod("epoch").invoke(e) + ","
                        + e.getClass().getMethod("startOffset").invoke(e) + "]");
            } else {
                Class<?> c = Class.forName("org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile");
                Object f = c.getConstructor(File.class, LogDirFailureChannel.class)
                    .newInstance(file, new LogDirFailureChannel(1));
                for (Map.Entry<TopicPartition, Long> e
                        : ((Map<TopicPartition, Long>) c.getMethod("read").invoke(f)).entrySet())
                    entries.add("[" + quote(e.getKey().topic()) + "," + e.getKey().partition() + "," + e.getValue() + "]");
                Collections.sort(entries);
            }
        } catch (java.lang.reflect.InvocationTargetException t) {
            return "{\"exception\":" + quote(describe(t.getCause())) + "}";
        } catch (ClassNotFoundException | NoSuchMethodException t) {
            throw t;
        } catch (Throwable t) {
            return "{\"exception\":" + quote(describe(t)) + "}";
        }
        return "{\"entries\":[" + String.join(",", entries) + "]}";
    }

    /** A compressed payload read through Kafka's decompressing stream, as {@code DefaultRecordBatch}'s iterators
     *  open and read it: {@code Compression.of(type).build().wrapForInput(payload, magic, BufferSupplier.create())},
     *  then the {@code ops} in order (comma separated): {@code r} is one {@code read()}, {@code fN} one
     *  {@code Utils.readFully} into a buffer of N bytes. The answer: {"opening": ...} where opening throws, else
     *  {"counts": [bytes each op delivered, -1 for read() at the end], "data": base64 of every byte delivered,
     *  "end": the exception an op threw (class: message; its cause's too for a KafkaException) or null}. */
    private static String stream(int codec, byte magic, File file, String ops) throws Exception {
        java.nio.ByteBuffer payload = java.nio.ByteBuffer.wrap(java.nio.file.Files.readAllBytes(file.toPath()));
        java.io.InputStream in;
        try {
            // BufferSupplier is in common.utils.internals in 4.4, common.utils in 3.9
            Class<?> supplier;
            try {
                supplier = Class.forName("org.apache.kafka.common.utils.internals.BufferSupplier");
            } catch (ClassNotFoundException e) {
                supplier = Class.forName("org.apache.kafka.common.utils.BufferSupplier");
            }
            Class<?> type;  // CompressionType: in common.record.internal in 4.4, common.record in 3.9
            try {
                type = Class.forName("org.apache.kafka.common.record.internal.CompressionType");
            } catch (ClassNotFoundException e) {
                type = Class.forName("org.apache.kafka.common.record.CompressionType");
            }
            Object builder = org.apache.kafka.common.compress.Compression.class.getMethod("of", type)
                .invoke(null, type.getMethod("forId", int.class).invoke(null, codec));
            Method build = builder.getClass().getMethod("build");
            build.setAccessible(true);
            Object compression = build.invoke(builder);
            Method wrap = compression.getClass().getMethod("wrapForInput", java.nio.ByteBuffer.class, byte.class,
                supplier);
            wrap.setAccessible(true);
            in = (java.io.InputStream) wrap.invoke(compression, payload, magic, supplier.getMethod("create").invoke(null));
        } catch (InvocationTargetException t) {
            return "{\"opening\":" + quote(describe(t.getCause())) + "}";
        } catch (Throwable t) {
            return "{\"opening\":" + quote(describe(t)) + "}";
        }
        java.io.ByteArrayOutputStream data = new java.io.ByteArrayOutputStream();
        List<String> counts = new ArrayList<>();
        String end = "null";
        try {
            for (String op : ops.split(",")) {
                if (op.isEmpty()) continue;
                if (op.equals("r")) {
                    int b = in.read();
                    counts.add(Integer.toString(b < 0 ? -1 : 1));
                    if (b >= 0) data.write(b);
                } else {
                    java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(Integer.parseInt(op.substring(1)));
                    int n = org.apache.kafka.common.utils.Utils.readFully(in, buf);
                    counts.add(Integer.toString(n));
                    data.write(buf.array(), 0, n);
                }
            }
        } catch (Throwable t) {
            end = quote(describe(t) + (t.getCause() != null ? " | " + describe(t.getCause()) : ""));
        }
        return "{\"counts\":[" + String.join(",", counts) + "],\"data\":\""
            + java.util.Base64.getEncoder().encodeToString(data.toByteArray()) + "\",\"end\":" + end + "}";
    }

    private static String recoverDir(File dir, int indexInterval, int segmentIndexBytes) throws Exception {
        TreeMap<Long, File> logs = new TreeMap<>();
        for (File f : dir.listFiles()) {
            String name = f.getName();
            if (name.endsWith(".log")) logs.put(Long.parseLong(name.substring(0, name.length() - 4)), f);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("index.interval.bytes", indexInterval);
        props.put("segment.index.bytes", segmentIndexBytes);
        LogConfig config = new LogConfig(props);
        ProducerStateManager psm = new ProducerStateManager(TP, dir, 60 * 60 * 1000,
            new ProducerStateManagerConfig(86400000, false), Time.SYSTEM);
        LeaderEpochFileCache cache = new LeaderEpochFileCache(TP,
            new LeaderEpochCheckpointFile(LeaderEpochCheckpointFile.newFile(dir), new LogDirFailureChannel(1)),
            new KafkaScheduler(1));
        Method recover = findRecover();
        StringBuilder sb = new StringBuilder("{\"segments\":[");
        String stoppedAt = null;
        boolean first = true;
        for (Map.Entry<Long, File> e : logs.entrySet()) {
            long base = e.getKey();
            long sizeBefore = e.getValue().length();
            LogSegment segment = LogSegment.open(dir, base, config, Time.SYSTEM, true, 0, false, "");
            String exception = null;
            int truncated = 0;
            try {
                Object epochArg = recover.getParameterTypes()[1] == Optional.class ? Optional.of(cache) : cache;
                truncated = (Integer) recover.invoke(segment, psm, epochArg);
            } catch (InvocationTargetException ite) {
                exception = describe(ite.getCause());
            }
            long validBytes = segment.size();
            segment.close();
            if (!first) sb.append(',');
            first = false;
            sb.append("{\"baseOffset\":").append(base)
              .append(",\"sizeBefore\":").append(sizeBefore)
              .append(",\"validBytes\":").append(validBytes)
              .append(",\"truncated\":").append(truncated)
              .append(",\"exception\":").append(exception == null ? "null" : quote(exception))
              .append('}');
            if (exception != null || truncated > 0) {
                stoppedAt = Long.toString(base);
                break;
            }
        }
        sb.append("],\"epochs\":[");
        List<String> epochs = new ArrayList<>();
        for (EpochEntry entry : cache.epochEntries()) {
            epochs.add("[" + member(entry, "epoch") + "," + member(entry, "startOffset") + "]");
        }
        sb.append(String.join(",", epochs)).append("],\"stoppedAt\":").append(stoppedAt).append('}');
        return sb.toString();
    }

    /** A clock stopped at one instant: producer expiry and segment times are then reproducible. */
    private static final class FixedTime implements Time {
        private final long ms;

        FixedTime(long ms) {
            this.ms = ms;
        }

        @Override public long milliseconds() {
            return ms;
        }

        @Override public long nanoseconds() {
            return ms * 1_000_000L;
        }

        @Override public void sleep(long sleepMs) {
        }

        // abstract in 3.9's Time, a default method in 4.x
        public void waitObject(Object obj, java.util.function.Supplier<Boolean> condition, long deadlineMs)
                throws InterruptedException {
            synchronized (obj) {
                while (!condition.get()) obj.wait(10);
            }
        }
    }

    /**
     * {@code UnifiedLog.create} (4.x, Java) or {@code UnifiedLog.apply} (3.9, Scala): the factory with the most
     * parameters, each argument chosen by its type (the first boolean is {@code lastShutdownClean}, the first
     * long the log start offset, the second the recovery point, the first int the maximum transaction timeout).
     */
    private static String load(File dir, long logStartOffset, long recoveryPoint, boolean clean, long now,
                               String configPairs) throws Exception {
        Object[] opened = openLog(dir, logStartOffset, recoveryPoint, clean, now, configPairs);
        if (opened[0] instanceof String) return (String) opened[0];
        Object log = opened[0];
        try {
            log.getClass().getMethod("flush", boolean.class).invoke(log, true);
            long lso = (Long) log.getClass().getMethod("logStartOffset").invoke(log);
            long leo = (Long) log.getClass().getMethod("logEndOffset").invoke(log);
            long rp = (Long) log.getClass().getMethod("recoveryPoint").invoke(log);
            return "{\"logStartOffset\":" + lso + ",\"logEndOffset\":" + leo + ",\"recoveryPoint\":" + rp + "}";
        } finally {
            log.getClass().getMethod("close").invoke(log);
            ((KafkaScheduler) opened[1]).shutdown();
        }
    }

    /**
     * Where a Kafka release keeps its log cleaner, all by reflection so that this file compiles against every
     * release: 4.x's Java classes ({@code org.apache.kafka.storage.internals.log}: static {@code cleanableOffsets}
     * with an {@code Optional}, a {@code Consumer} as {@code checkDone}, a {@code Map.Entry} from {@code doClean}), or
     * 3.x's Scala ones ({@code kafka.log}: the {@code LogCleanerManager} object with a Scala {@code Option}, its
     * private {@code maxCompactionDelay}, {@code LogToClean} with the partition, a proxy {@code Function1} as
     * {@code checkDone}, a {@code Tuple2} from {@code doClean}).
     */
    private static final class CleanerClasses {
        static final String STORAGE = "org.apache.kafka.storage.internals.log.";
        final boolean scala;
        final Class<?> unified;
        final Class<?> toClean;
        final Class<?> cleaner;
        final Class<?> checkDoneType;
        final Object manager; // the Scala object whose methods these are; null for 4.x's statics
        final Method offsets;
        final Method delay;

        private CleanerClasses(boolean scala) throws ReflectiveOperationException {
            this.scala = scala;
            String pkg = scala ? "kafka.log." : STORAGE;
            unified = Class.forName(pkg + "UnifiedLog");
            toClean = Class.forName(pkg + "LogToClean");
            cleaner = Class.forName(pkg + "Cleaner");
            if (scala) {
                Class<?> object = Class.forName("kafka.log.LogCleanerManager$");
                manager = object.getField("MODULE$").get(null);
                checkDoneType = Class.forName("scala.Function1");
                offsets = object.getMethod("cleanableOffsets", unified, Class.forName("scala.Option"), long.class);
                delay = object.getMethod("kafka$log$LogCleanerManager$$maxCompactionDelay", unified, long.class,
                    long.class);
            } else {
                Class<?> managerClass = Class.forName(pkg + "LogCleanerManager");
                manager = null;
                checkDoneType = java.util.function.Consumer.class;
                offsets = managerClass.getDeclaredMethod("cleanableOffsets", unified, Optional.class, long.class);
                delay = managerClass.getDeclaredMethod("maxCompactionDelay", unified, long.class, long.class);
                offsets.setAccessible(true);
                delay.setAccessible(true);
            }
        }

        /** 4.x's classes, else 3.x's; null when this release has neither. */
        static CleanerClasses find() throws ReflectiveOperationException {
            for (boolean scala : new boolean[] {false, true}) {
                try {
                    return new CleanerClasses(scala);
                } catch (ClassNotFoundException e) {
                    // not this release's
                }
            }
            return null;
        }

        /** {@code LogCleanerManager.cleanableOffsets} with the checkpointed offset ({@code -}: none). */
        Object cleanableOffsets(Object log, String checkpoint, long now) throws ReflectiveOperationException {
            Long offset = checkpoint.equals("-") ? null : Long.valueOf(checkpoint);
            Object option = !scala ? Optional.ofNullable(offset) : offset == null
                ? Class.forName("scala.None$").getField("MODULE$").get(null)
                : Class.forName("scala.Option").getMethod("apply", Object.class).invoke(null, offset);
            return offsets.invoke(manager, log, option, now);
        }

        Object logToClean(Object log, long firstDirty, long uncleanable, boolean needCompactionNow)
                throws ReflectiveOperationException {
            if (!scala) {
                return toClean.getConstructor(unified, long.class, long.class, boolean.class)
                    .newInstance(log, firstDirty, uncleanable, needCompactionNow);
            }
            TopicPartition tp = (TopicPartition) unified.getMethod("topicPartition").invoke(log);
            return toClean.getConstructor(TopicPartition.class, unified, long.class, long.class, boolean.class)
                .newInstance(tp, log, firstDirty, uncleanable, needCompactionNow);
        }

        /** A {@code checkDone} that does nothing. */
        Object checkDone() throws ReflectiveOperationException {
            if (!scala) {
                java.util.function.Consumer<TopicPartition> none = tp -> { };
                return none;
            }
            Object unit = Class.forName("scala.runtime.BoxedUnit").getField("UNIT").get(null);
            return java.lang.reflect.Proxy.newProxyInstance(checkDoneType.getClassLoader(),
                new Class<?>[] {checkDoneType}, (proxy, method, args) -> {
                    if (method.getName().equals("apply")) return unit;
                    if (method.getName().equals("toString")) return "checkDone";
                    if (method.getName().equals("hashCode")) return 0;
                    if (method.getName().equals("equals")) return proxy == args[0];
                    throw new UnsupportedOperationException(method.getName());
                });
        }

        /** The end offset {@code doClean} answers with its stats. */
        Object endOffset(Object result) throws ReflectiveOperationException {
            return scala ? result.getClass().getMethod("_1").invoke(result) : ((Map.Entry<?, ?>) result).getKey();
        }
    }

    /**
     * The log cleaner's view of one partition (4.x's Java classes or 3.x's Scala ones, {@code CleanerClasses}): the
     * log opened as {@code load} opens it, its high watermark set to {@code hw} (-1: the log end offset), then
     * {@code LogCleanerManager.cleanableOffsets} with the checkpointed offset ({@code -}: none),
     * {@code maxCompactionDelay} and {@code LogToClean}, all at {@code now}; with {@code dedupe > 0} also one
     * {@code Cleaner.doClean} round with an offset map of that many bytes, which rewrites the dir as Kafka's
     * cleaner does (its {@code .deleted} files removed) and answers the round's end offset and its milliseconds
     * ({@code cleanMs}: {@code doClean} alone, what the cleaning benchmark compares), or {@code cleanException}
     * where the round threw (the view's fields still answered).
     */
    private static String cleanable(File dir, long logStartOffset, long now, long hw, String checkpoint, int dedupe,
                                    String configPairs, long recoveryPoint, boolean clean, int ioBufferSize,
                                    int maxIoBufferSize, double loadFactor) throws Exception {
        CleanerClasses k = CleanerClasses.find();
        if (k == null) return "{\"unsupported\":\"no log cleaner classes found\"}";
        Object[] opened = openLog(dir, logStartOffset, recoveryPoint, clean, now, configPairs);
        if (opened[0] instanceof String) return (String) opened[0];
        Object log = opened[0];
        try {
            long leo = (Long) k.unified.getMethod("logEndOffset").invoke(log);
            k.unified.getMethod("updateHighWatermark", long.class).invoke(log, hw < 0 ? leo : hw);
            Object o = k.cleanableOffsets(log, checkpoint, now);
            long firstDirty = (Long) accessor(o, "firstDirtyOffset");
            long uncleanableDirty = (Long) accessor(o, "firstUncleanableDirtyOffset");
            boolean force = (Boolean) accessor(o, "forceUpdateCheckpoint");
            long delay = (Long) k.delay.invoke(k.manager, log, firstDirty, now);
            Object ltc = k.logToClean(log, firstDirty, uncleanableDirty, delay > 0);
            StringBuilder answer = new StringBuilder("{\"lastStableOffset\":"
                + k.unified.getMethod("lastStableOffset").invoke(log) + ",\"logEndOffset\":" + leo
                + ",\"firstDirtyOffset\":" + firstDirty + ",\"firstUncleanableDirtyOffset\":" + uncleanableDirty
                + ",\"forceUpdateCheckpoint\":" + force + ",\"maxCompactionDelay\":" + delay);
            for (String name : new String[] {"firstUncleanableOffset", "cleanBytes", "cleanableBytes", "totalBytes",
                                             "cleanableRatio"}) {
                answer.append(",\"").append(name).append("\":").append(accessor(ltc, name));
            }
            if (dedupe > 0) {
                Time time = new FixedTime(now);
                Object map = Class.forName(CleanerClasses.STORAGE + "SkimpyOffsetMap")
                    .getConstructor(int.class, String.class).newInstance(dedupe, "MD5");
                Class<?> throttlerClass = Class.forName("org.apache.kafka.storage.internals.utils.Throttler");
                Object throttler = throttlerClass.getConstructor(double.class, long.class, String.class, String.class,
                    Time.class).newInstance(Double.MAX_VALUE, Long.MAX_VALUE, "cleaner-io", "bytes", time);
                Class<?> offsetMap = Class.forName(CleanerClasses.STORAGE + "OffsetMap");
                Object cleaner = k.cleaner.getConstructor(int.class, offsetMap, int.class, int.class, double.class,
                    throttlerClass, Time.class, k.checkDoneType)
                    .newInstance(0, map, ioBufferSize, maxIoBufferSize, loadFactor, throttler, time, k.checkDone());
                long t0 = System.nanoTime();
                try {
                    Object result = k.cleaner.getMethod("doClean", k.toClean, long.class).invoke(cleaner, ltc, now);
                    double cleanMs = (System.nanoTime() - t0) / 1e6;
                    answer.append(",\"endOffset\":").append(k.endOffset(result))
                        .append(",\"cleanMs\":").append(String.format("%.3f", cleanMs));
                } catch (InvocationTargetException ite) {
                    // the round threw (a broker's cleaner thread then marks the partition uncleanable): the view
                    // above stands, the round's answer is the exception
                    answer.append(",\"cleanException\":").append(quote(describe(ite.getCause())));
                }
            }
            return answer.append("}").toString();
        } catch (InvocationTargetException ite) {
            return "{\"exception\":" + quote(describe(ite.getCause())) + "}";
        } finally {
            log.getClass().getMethod("close").invoke(log);
            ((KafkaScheduler) opened[1]).shutdown();
        }
    }

    /** A record component or a plain getter, private or not. */
    private static Object accessor(Object o, String name) throws ReflectiveOperationException {
        Method m = o.getClass().getDeclaredMethod(name);
        m.setAccessible(true);
        return m.invoke(o);
    }

    /** {@code {log, scheduler}} of the partition opened as a broker's start opens it, or {@code {json}} of why not. */
    private static Object[] openLog(File dir, long logStartOffset, long recoveryPoint, boolean clean, long now,
                                    String configPairs) throws Exception {
        Map<String, Object> props = new HashMap<>();
        for (String kv : configPairs.split(";")) {
            if (kv.isEmpty()) continue;
            int eq = kv.indexOf('=');
            props.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        LogConfig config = new LogConfig(props);
        Object owner;
        Method factory = null;
        try {
            Class<?> c = Class.forName("org.apache.kafka.storage.internals.log.UnifiedLog");
            owner = null;
            for (Method m : c.getMethods()) {
                if (m.getName().equals("create")
                        && (factory == null || m.getParameterCount() > factory.getParameterCount())) factory = m;
            }
        } catch (ClassNotFoundException e) {
            Class<?> c = Class.forName("kafka.log.UnifiedLog$");
            owner = c.getField("MODULE$").get(null);
            for (Method m : c.getMethods()) {
                if (m.getName().equals("apply")
                        && (factory == null || m.getParameterCount() > factory.getParameterCount())) factory = m;
            }
        }
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        Class<?>[] types = factory.getParameterTypes();
        Object[] args = new Object[types.length];
        int longs = 0, ints = 0, booleans = 0;
        for (int i = 0; i < types.length; i++) {
            Class<?> t = types[i];
            if (t == File.class) args[i] = dir;
            else if (t == LogConfig.class) args[i] = config;
            else if (t == long.class) args[i] = longs++ == 0 ? logStartOffset : recoveryPoint;
            else if (t == int.class) args[i] = ints++ == 0 ? 900000 : 600000;
            else if (t == boolean.class) args[i] = booleans++ == 0 && clean;
            else if (t == Time.class) args[i] = new FixedTime(now);
            else if (t.getSimpleName().equals("Scheduler")) args[i] = scheduler;
            else if (t.getSimpleName().equals("BrokerTopicStats")) args[i] = t.getConstructor(boolean.class).newInstance(false);
            else if (t == ProducerStateManagerConfig.class) args[i] = new ProducerStateManagerConfig(86400000, false);
            else if (t == LogDirFailureChannel.class) args[i] = new LogDirFailureChannel(1);
            else if (t == Optional.class) args[i] = Optional.empty();
            else if (t.getName().equals("scala.Option")) args[i] = Class.forName("scala.Option").getMethod("empty").invoke(null);
            else if (t == java.util.concurrent.ConcurrentMap.class) args[i] = new java.util.concurrent.ConcurrentHashMap<>();
            else if (t.getSimpleName().equals("LogOffsetsListener")) args[i] = t.getField("NO_OP_OFFSETS_LISTENER").get(null);
            else throw new IllegalStateException("UnifiedLog factory parameter of unknown type " + t);
        }
        try {
            return new Object[] {factory.invoke(owner, args), scheduler};
        } catch (InvocationTargetException ite) {
            scheduler.shutdown();
            return new Object[] {"{\"exception\":" + quote(describe(ite.getCause())) + "}"};
        }
    }

    /** EpochEntry has public fields in 3.9 and is a record (accessor methods) in 4.x. */
    private static Object member(Object o, String name) throws ReflectiveOperationException {
        try {
            return o.getClass().getMethod(name).invoke(o);
        } catch (NoSuchMethodException e) {
            return o.getClass().getField(name).get(o);
        }
    }

    private static String bench(File dir, long base, int indexInterval, int segmentIndexBytes, int runs)
            throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("index.interval.bytes", indexInterval);
        props.put("segment.index.bytes", segmentIndexBytes);
        LogConfig config = new LogConfig(props);
        Method recover = findRecover();
        List<String> ms = new ArrayList<>();
        for (int r = 0; r < runs; r++) {
            for (String suffix : new String[] {".index", ".timeindex", ".txnindex", ".snapshot"}) {
                File f = new File(dir, String.format("%020d%s", base, suffix));
                if (f.exists() && !f.delete()) throw new IllegalStateException("cannot delete " + f);
            }
            ProducerStateManager psm = new ProducerStateManager(TP, dir, 60 * 60 * 1000,
                new ProducerStateManagerConfig(86400000, false), Time.SYSTEM);
            LeaderEpochFileCache cache = new LeaderEpochFileCache(TP,
                new LeaderEpochCheckpointFile(LeaderEpochCheckpointFile.newFile(dir), new LogDirFailureChannel(1)),
                new KafkaScheduler(1));
            long t0 = System.nanoTime();
            LogSegment segment = LogSegment.open(dir, base, config, Time.SYSTEM, true, 0, false, "");
            Object epochArg = recover.getParameterTypes()[1] == Optional.class ? Optional.of(cache) : cache;
            recover.invoke(segment, psm, epochArg);
            segment.close();
            ms.add(String.format("%.3f", (System.nanoTime() - t0) / 1e6));
        }
        return "{\"ms\":[" + String.join(",", ms) + "]}";
    }

    private static Method findRecover() {
        for (Method m : LogSegment.class.getMethods()) {
            if (m.getName().equals("recover") && m.getParameterCount() == 2) return m;
        }
        throw new IllegalStateException("LogSegment.recover(ProducerStateManager, epoch cache) not found");
    }

    private static String describe(Throwable t) {
        return t.getClass().getName() + ": " + t.getMessage();
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }
}
