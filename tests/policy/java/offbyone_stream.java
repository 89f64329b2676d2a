// expect: OffByOne
import java.util.stream.IntStream;

public class SumCalculator {
    public static void main(String[] args) {
        int sum = IntStream.range(1, 100).sum();
        System.out.println(sum);
    }
}
