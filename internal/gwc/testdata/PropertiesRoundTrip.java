// PropertiesRoundTrip checks the Go Properties encoder and decoder against
// java.util.Properties itself. It is run by the gwcmeta tests as a
// single-file source program:
//
//     java PropertiesRoundTrip.java DIR
//
// For every case NAME in DIR (a file NAME.entries) it:
//   - loads NAME.properties (written by the Go encoder, or a decoder test
//     case) with Properties.load(InputStream) and writes the entries it got
//     to NAME.loaded, or the line ERROR if load refused the text;
//   - reads the entries of NAME.entries into a Properties object and
//     stores it with Properties.store(OutputStream, comment) in
//     NAME.stored, for the Go decoder to read back.
//
// An entries file has one entry per line, "KEY VALUE", each of them "x"
// followed by the hex of the string's UTF-16 code units (four upper-case
// digits per unit), so that any string, the empty one included, survives
// exactly. Lines are sorted.
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

public class PropertiesRoundTrip {
    // A comment with what Properties.store must turn into comment lines:
    // line breaks of every kind, a line starting with '!', non-ASCII text.
    static final String COMMENT = "parameters \u00e9 \u65e5\u672c \ud83d\ude00\nsecond\r\n!third\rfourth=x";

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: java PropertiesRoundTrip.java DIR");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        int cases = 0;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*.entries")) {
            for (Path entries : ds) {
                String name = entries.getFileName().toString();
                name = name.substring(0, name.length() - ".entries".length());
                runCase(dir, name, entries);
                cases++;
            }
        }
        System.out.println("cases: " + cases);
    }

    static void runCase(Path dir, String name, Path entries) throws IOException {
        Properties loaded = new Properties();
        List<String> lines;
        try (InputStream in = Files.newInputStream(dir.resolve(name + ".properties"))) {
            loaded.load(in);
            lines = format(loaded);
        } catch (IllegalArgumentException e) { // a malformed unicode escape
            lines = List.of("ERROR");
        }
        Files.write(dir.resolve(name + ".loaded"), lines, StandardCharsets.US_ASCII);

        Properties toStore = new Properties();
        for (String line : Files.readAllLines(entries, StandardCharsets.US_ASCII)) {
            if (line.isEmpty()) {
                continue;
            }
            String[] kv = line.split(" ", -1);
            if (kv.length != 2) {
                throw new IllegalArgumentException(name + ": bad entry line: " + line);
            }
            toStore.setProperty(unhex(kv[0]), unhex(kv[1]));
        }
        try (OutputStream out = Files.newOutputStream(dir.resolve(name + ".stored"))) {
            toStore.store(out, COMMENT);
        }
    }

    static List<String> format(Properties p) {
        List<String> lines = new ArrayList<>();
        for (Map.Entry<Object, Object> e : p.entrySet()) {
            lines.add(hex((String) e.getKey()) + " " + hex((String) e.getValue()));
        }
        lines.sort(null);
        return lines;
    }

    static String hex(String s) {
        StringBuilder b = new StringBuilder("x");
        for (int i = 0; i < s.length(); i++) {
            b.append(String.format("%04X", (int) s.charAt(i)));
        }
        return b.toString();
    }

    static String unhex(String s) {
        if (!s.startsWith("x") || (s.length() - 1) % 4 != 0) {
            throw new IllegalArgumentException("bad hex string: " + s);
        }
        StringBuilder b = new StringBuilder();
        for (int i = 1; i < s.length(); i += 4) {
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
        }
        return b.toString();
    }
}
