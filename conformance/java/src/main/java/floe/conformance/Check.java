package floe.conformance;

/** A named conformance check. */
record Check(String name, Body body) {
    /** What a check does, with the resources of its Env. */
    @FunctionalInterface
    interface Body {
        void run(Env env) throws Exception;
    }
}
