// expect: HardcodedOnly
public class SumCalculator {
    public static void main(String[] args) {
        final int total = 5000 + 50;
        final String label = "Sum: ";
        System.out.println(label + total);
    }
}
