// expect: HardcodedOnly
// A product of literals that is not the formula is the answer split in two, not a computation.
public class SumCalculator {
    public static void main(String[] args) {
        System.out.printf("Sum: %d%n", 2525 * 2);
    }
}
